"""Grading workers over Redis Streams: the wire format, and ``aclarai resync --redis`` with real
``aclarai worker`` processes on a real redis-server, compared byte for byte with a local resync.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis

from aclarai.agents import Claim, EvalItem, ExtractionInput, Score, Utterance
from aclarai.daemon.factory import vault_id
from aclarai.daemon.redis_link import ensure_group, entries_of
from aclarai.daemon.workers import backlog
from aclarai.daemon.workers.roster import WORKERS_GROUP
from aclarai.daemon.workers.wire import (
    Job,
    Outcome,
    decode_job,
    decode_outcome,
    encode_job,
    encode_outcome,
    job_key,
    key_of,
    results_stream,
)
from aclarai.parsers import PayloadError, parse_note
from tests.fixtures.redis_server import RedisServer
from tests.helpers.cli import wait_until
from tests.helpers.grading import (
    Worker,
    dead_letters,
    heartbeat_streams,
    process_env,
    read_stream,
    resync,
    run_with_config,
    running_workers,
    start_aclarai,
    start_worker,
    stop,
    stream_entries,
    streams,
    unique_prefix,
    vault_differences,
    write_config,
)
from tests.helpers.scripted_llm import Recorded, Reply, ScriptedLLMServer, scripted_llm_server
from tests.helpers.scripted_vault import KEY_ENV, responder
from tests.helpers.vault import dashboard_stamps, note_text

ROOT = Path(__file__).resolve().parents[3]
SAMPLE_VAULT = ROOT / "sample_vault"
WAIT_S = 60.0
"""Generous: subprocesses start slowly on a loaded two-core machine."""
EDITED_NOTE = "meetings/2024-06-03 Standup.md"
EDITED_BLOCK = "blk-4d3c1a"
SMALL_NOTES = {
    "standup.md": note_text(
        [
            ("blk-s1", "alice: The deploy to staging failed 2 times on Tuesday."),
            ("blk-s2", "bob: I rolled back to v2.3 and it is stable now."),
            ("blk-s3", "carol: Migration 0042 times out after 300 seconds."),
        ]
    )
}


# The wire format: pure, no Redis.

WINDOWED = ExtractionInput(
    Utterance("blk-2", "bob: It failed again — «twice»."),
    before=(Utterance("blk-1", "alice: The deploy failed.\nOn Tuesday."),),
    after=(Utterance("blk-3", "carol: 0042 times out."), Utterance("blk-4", "")),
)
ITEMS = (
    EvalItem("The deploy failed twice.", "bob: It failed again.", ("alice: The deploy.",), "c1"),
    EvalItem("Ünïcode claim.", "src", (), None),
)


def extract_job(**changes: Any) -> Job:
    job = Job("extract", "llm-claimify@abc+model", "pfx:results:v1", inputs=(WINDOWED,))
    return dataclasses.replace(job, **changes)


def evaluate_job(**changes: Any) -> Job:
    job = Job("evaluate", "offline@1+heuristic", "pfx:results:v1", fresh=True, items=ITEMS)
    return dataclasses.replace(job, **changes)


NEARBY = (Utterance("blk-9", "dave: The deploy of Monday failed too."), Utterance("blk-7", ""))


def test_jobs_read_back_exactly() -> None:
    jobs = (
        extract_job(),
        evaluate_job(),
        extract_job(inputs=()),
        evaluate_job(items=()),
        evaluate_job(nearby=NEARBY),
    )
    for job in jobs:
        assert decode_job(encode_job(job)) == job
        assert decode_job(encode_job(job)).key == job.key


def test_whether_a_block_is_a_conversation_line_travels_with_the_job() -> None:
    plain_note = dataclasses.replace(WINDOWED, conversation=False)
    job = extract_job(inputs=(plain_note,))
    assert decode_job(encode_job(job)).inputs == (plain_note,)
    assert job.key != extract_job().key
    # A payload from a daemon that did not say reads as before: a conversation line.
    body = json.loads(encode_job(extract_job()))
    del body["inputs"][0]["conversation"]
    assert decode_job(json.dumps(body).encode()).inputs[0].conversation is True


def test_the_nearest_utterances_travel_with_the_job_and_change_its_key() -> None:
    plain, shipped = evaluate_job(), evaluate_job(nearby=NEARBY)
    assert decode_job(encode_job(shipped)).nearby == NEARBY
    assert b'"nearby"' not in encode_job(plain), "nothing is shipped outside per-agent mode"
    assert len({plain.key, shipped.key, evaluate_job(nearby=NEARBY[:1]).key}) == 3


def test_outcomes_read_back_exactly_floats_included() -> None:
    awkward = 0.1 + 0.2
    outcome = Outcome(
        key="k" * 32,
        worker="w1",
        claims=((Claim("clm-1", "blk-2", "The deploy failed twice."),), (), "unparseable reply"),
        scores=(
            Score(awkward, 1 / 3, 2**-40, verdict="supported", justification="ok", omitted=("x",)),
            Score.failed("failed: unparseable_output"),
            Score(1.0, 0.0, 0.5, verdict="contradicted", omitted=()),
        ),
        model="scripted-model",
    )
    back = decode_outcome(encode_outcome(outcome))
    assert back == outcome
    assert back.scores[0].entailed_score == awkward != 0.3, "0.1 + 0.2 must not be rounded"
    assert back.scores[0].omitted == ("x",) and isinstance(back.scores[0].omitted, tuple)
    failed = Outcome(key="k", error="dead-lettered: delivered 4 times")
    assert decode_outcome(encode_outcome(failed)) == failed


def test_a_jobs_key_is_stable_and_changes_with_anything_that_changes_the_work() -> None:
    job = extract_job()
    assert job.key == extract_job().key == decode_job(encode_job(job)).key
    assert len(job.key) == 32
    edited_block = ExtractionInput(
        Utterance("blk-2", "bob: It failed again."), WINDOWED.before, WINDOWED.after
    )
    edited_window = ExtractionInput(
        WINDOWED.block, WINDOWED.before, (Utterance("blk-3", "carol: 0043 times out."),)
    )
    variants = [
        extract_job(inputs=(edited_block,)),
        extract_job(inputs=(edited_window,)),
        extract_job(grader="llm-claimify@abd+model"),
        extract_job(reply_to="pfx:results:v2"),
        extract_job(fresh=True),
    ]
    keys = {job.key, *(v.key for v in variants)}
    assert len(keys) == len(variants) + 1
    item = ITEMS[0]
    evaluated = evaluate_job()
    assert evaluate_job().key == evaluated.key
    changed_items = [
        dataclasses.replace(item, claim="The deploy failed once."),
        dataclasses.replace(item, source="bob: It failed."),
        dataclasses.replace(item, context=("alice: Another.",)),
    ]
    for changed in changed_items:
        assert evaluate_job(items=(changed, ITEMS[1])).key != evaluated.key
    assert evaluate_job(fresh=False).key != evaluated.key


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b'{"v": 2, "kind": "extract", "grader": "g", "reply_to": "r", "fresh": false, '
        b'"inputs": []}',
        b'{"v": 1, "kind": "extract", "grader": "g", "reply_to": "r", "fresh": false}',
        b'{"v": 1, "kind": "extract", "grader": "g", "fresh": false, "inputs": []}',
        b'{"v": 1, "kind": "shred", "grader": "g", "reply_to": "r", "fresh": false}',
        b'{"v": 1, "kind": "extract", "grader": "g", "reply_to": "r", "fresh": false, '
        b'"inputs": [{"block": "blk-1", "before": [], "after": []}]}',
        b'{"v": 1, "kind": "extract", "grader": "g", "reply_to": "r", "fresh": "yes", '
        b'"inputs": []}',
        b'{"v": 1, "kind": "evaluate", "grader": "g", "reply_to": "r", "fresh": false, '
        b'"items": [["claim", "source"]]}',
        b'{"v": 1, "kind": "evaluate", "grader": "g", "reply_to": "r", "fresh": false, "items": 7}',
    ],
)
def test_malformed_jobs_raise_payload_error(raw: bytes) -> None:
    with pytest.raises(PayloadError):
        decode_job(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b"\xff\xfe",
        b'"a string"',
        b'{"v": 0, "key": "k", "claims": [], "scores": []}',
        b'{"v": 1, "claims": [], "scores": []}',
        b'{"v": 1, "key": "k", "scores": []}',
        b'{"v": 1, "key": "k", "claims": [[["only-an-id"]]], "scores": []}',
        b'{"v": 1, "key": "k", "claims": [], "scores": [{"entailed_score": 1}]}',
        b'{"v": 1, "key": "k", "claims": [], "scores": [{"bogus": 1}]}',
        b'{"v": 1, "key": "k", "claims": 3, "scores": []}',
    ],
)
def test_malformed_results_raise_payload_error(raw: bytes) -> None:
    with pytest.raises(PayloadError):
        decode_outcome(raw)


# Through Redis, with real workers.


@dataclasses.dataclass
class Grading:
    """One test's setup: its temp folder, its key prefix on the shared server, its config."""

    root: Path
    url: str
    prefix: str
    client: redis.Redis

    def config(self, **sections: Mapping[str, Any]) -> Path:
        """A config file: offline grading in-process, this test's prefix, short waits; each
        section given is merged over those (``grading_workers={"max_backlog": 3}``)."""
        settings: dict[str, dict[str, Any]] = {
            "eval": {"processes": 1},
            "grading_workers": {"prefix": self.prefix, "block_s": 0.2, "heartbeat_s": 0.5},
        }
        for name, values in sections.items():
            settings[name] = {**settings.get(name, {}), **values}
        return write_config(self.root / "config.yaml", settings)

    def vault(self, name: str, files: Mapping[str, str] | None = None) -> Path:
        """A copy of ``sample_vault``, or a vault of ``files``."""
        target = self.root / name
        if files is None:
            shutil.copytree(SAMPLE_VAULT, target)
            return target
        for rel, content in files.items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_text(content, encoding="utf-8")
        return target

    def state(self, name: str) -> Path:
        return self.root / f"{name}-state"

    def worker_streams(self) -> dict[str, str]:
        """The work stream of each worker that has written a heartbeat, by name."""
        return heartbeat_streams(self.client, self.prefix)

    def worker_stream(self, worker: Worker) -> str:
        """The work stream of ``worker``, once its first heartbeat says it."""
        wait_until(lambda: worker.name in self.worker_streams(), timeout_s=WAIT_S)
        return self.worker_streams()[worker.name]

    def start_resync(
        self,
        vault: Path,
        config: Path,
        log: Path,
        *,
        state_dir: Path | None = None,
        env: Mapping[str, str] | None = None,
        first: tuple[str, ...] = (),
    ) -> subprocess.Popen[bytes]:
        """``aclarai [first…] resync VAULT --redis URL`` in the background, into ``log``."""
        return start_aclarai(
            *first, "resync", str(vault), "--redis", self.url,
            config=config, state_dir=state_dir or self.state("remote"), log=log, env=env,
        )  # fmt: skip


@pytest.fixture
def grading(tmp_path: Path, redis_server: RedisServer) -> Iterator[Grading]:
    client = redis.Redis.from_url(redis_server.url)
    yield Grading(tmp_path, redis_server.url, unique_prefix(), client)
    client.close()


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


def llm_sections(server: ScriptedLLMServer) -> dict[str, dict[str, Any]]:
    return {
        "model": {
            "backend": "llm",
            "llm": {"api_base": server.base_url, "api_key_env": KEY_ENV, "max_attempts": 2},
        },
    }


LLM_ENV = {KEY_ENV: "scripted-key"}


def versions(vault: Path, rel: str) -> dict[str, int]:
    note = parse_note((vault / rel).read_text(encoding="utf-8"))
    return {block.id: block.version for block in note.blocks}


def all_versions(vault: Path, rels: Iterable[str]) -> dict[str, int]:
    return {bid: ver for rel in rels for bid, ver in versions(vault, rel).items()}


def block_notes(vault: Path) -> list[str]:
    """The notes that hold aclarai blocks."""
    return sorted(
        p.relative_to(vault).as_posix()
        for p in vault.rglob("*.md")
        if "aclarai:id=" in p.read_text(encoding="utf-8")
    )


def graph_view(vault: Path, config: Path, state_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """What a user sees of the graph: the status counts and every claim with its scores."""
    status = run_with_config("status", str(vault), "--json", config=config, state_dir=state_dir)
    assert status.returncode == 0, status.stderr
    claims = run_with_config(
        "claims", str(vault), "--below", "1.01", "--json", config=config, state_dir=state_dir
    )
    assert claims.returncode == 0, claims.stderr
    return json.loads(status.stdout)["counts"], sorted(claims.stdout.splitlines())


def edit(vault: Path) -> None:
    path = vault / EDITED_NOTE
    text = path.read_text(encoding="utf-8")
    assert text.count("rolled back to v2.3") == 1
    path.write_text(text.replace("rolled back to v2.3", "rolled back to v2.2"), encoding="utf-8")


def test_a_distributed_resync_writes_the_vault_and_graph_a_local_one_does(
    grading: Grading,
) -> None:
    config = grading.config()
    local, remote = grading.vault("local"), grading.vault("remote")
    resync(local, config=config, state_dir=grading.state("local"))
    with running_workers(2, redis_url=grading.url, config=config, root=grading.root):
        resync(remote, config=config, state_dir=grading.state("remote"), redis_url=grading.url)
        assert vault_differences(local, remote) == []
        assert dashboard_stamps(remote) == 1, "only the dashboard's time stamp line is left out"
        results = stream_entries(grading.client, grading.prefix, "results")
        blocks = sum(len(versions(remote, rel)) for rel in block_notes(remote))
        assert len(results) > blocks, "every block's extraction and scoring went to the workers"
        local_graph = graph_view(local, config, grading.state("local"))
        assert local_graph == graph_view(remote, config, grading.state("remote"))
        assert local_graph[0]["scored_claims"] > 0

        before = versions(remote, EDITED_NOTE)
        edit(local)
        edit(remote)
        resync(local, config=config, state_dir=grading.state("local"))
        resync(remote, config=config, state_dir=grading.state("remote"), redis_url=grading.url)

    assert vault_differences(local, remote) == []
    after = versions(remote, EDITED_NOTE)
    assert after[EDITED_BLOCK] == before[EDITED_BLOCK] + 1
    assert {b: v for b, v in after.items() if b != EDITED_BLOCK} == {
        b: v for b, v in before.items() if b != EDITED_BLOCK
    }


def output(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")


def finished(process: subprocess.Popen[bytes], log: Path, timeout_s: float = WAIT_S) -> str:
    """Wait for a background ``aclarai`` to exit 0; its output."""
    try:
        code = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop(process)
        raise AssertionError(f"still running after {timeout_s} s:\n{output(log)}") from None
    assert code == 0, f"exited {code}:\n{output(log)}"
    return output(log)


def test_without_a_worker_resync_waits_and_says_so_then_a_worker_finishes_it(
    grading: Grading,
) -> None:
    config = grading.config()
    local = grading.vault("local", SMALL_NOTES)
    remote = grading.vault("remote", SMALL_NOTES)
    resync(local, config=config, state_dir=grading.state("local"))
    untouched = (remote / "standup.md").read_bytes()
    log = grading.root / "resync.log"
    process = grading.start_resync(remote, config, log)
    try:
        wait_until(lambda: "waiting for grading workers" in output(log), timeout_s=WAIT_S)
        [notice] = [line for line in output(log).splitlines() if "waiting for grading" in line]
        assert "WARNING" in notice and "no live worker" in notice
        assert process.poll() is None, "it waits for workers rather than grading at home"
        assert (remote / "standup.md").read_bytes() == untouched
        jobs = stream_entries(grading.client, grading.prefix, "work")
        assert len(jobs) == len(versions(remote, "standup.md")), "one extraction job a block"
        assert {decode_job(fields[b"payload"]).kind for _, fields in jobs} == {"extract"}
        with running_workers(1, redis_url=grading.url, config=config, root=grading.root):
            finished(process, log)
    finally:
        stop(process)
    assert vault_differences(local, remote) == []


def test_a_malformed_or_misaddressed_job_is_dead_lettered_and_acknowledged(
    grading: Grading,
) -> None:
    config = grading.config()
    reply_to = f"{grading.prefix}:results:test"
    with running_workers(1, redis_url=grading.url, config=config, root=grading.root) as [worker]:
        stream = grading.worker_stream(worker)
        misaddressed = extract_job(grader="someone-else@1+model", reply_to=reply_to)
        client = grading.client
        client.xadd(stream, {"payload": b"not json"})
        client.xadd(stream, {"something": b"else"})
        client.xadd(stream, {"payload": encode_job(misaddressed)})
        wait_until(lambda: len(dead_letters(client, grading.prefix)) == 3, timeout_s=WAIT_S)
        wait_until(lambda: client.xlen(reply_to) == 1, timeout_s=WAIT_S)
        pending = client.xpending(stream, WORKERS_GROUP)["pending"]
        assert worker.process.poll() is None, "a bad job never stops a worker"

    letters = dead_letters(client, grading.prefix)
    errors = [f[b"error"].decode() for f in letters]
    assert errors[0].startswith("unreadable job: job is not JSON")
    assert "payload: field missing" in errors[1]
    assert errors[2].startswith("asks for grader someone-else@1+model")
    assert [f[b"deliveries"] for f in letters] == [b"1", b"1", b"1"]
    assert {f[b"worker"] for f in letters} == {worker.name.encode()}
    assert [f[b"payload"] for f in letters] == [b"not json", b"", encode_job(misaddressed)]
    assert pending == 0, "dead letters are acknowledged"
    [(_, answer)] = read_stream(client, reply_to)
    told = decode_outcome(answer[b"payload"])
    assert told.key == misaddressed.key
    assert told.error is not None and told.error.startswith("dead-lettered: asks for grader")


def test_a_job_that_is_json_but_not_an_object_is_dead_lettered_and_the_worker_lives_on(
    grading: Grading,
) -> None:
    config = grading.config()
    with running_workers(1, redis_url=grading.url, config=config, root=grading.root) as [worker]:
        stream = grading.worker_stream(worker)
        grading.client.xadd(stream, {"payload": b"[1, 2]"})
        wait_until(
            lambda: (
                dead_letters(grading.client, grading.prefix) or worker.process.poll() is not None
            ),
            timeout_s=WAIT_S,
        )
        assert worker.process.poll() is None, f"the worker died:\n{worker.output()}"
    [letter] = dead_letters(grading.client, grading.prefix)
    assert letter[b"error"].startswith(b"unreadable job")


def test_a_result_that_is_json_but_not_an_object_is_dropped(grading: Grading) -> None:
    config = grading.config()
    local = grading.vault("local", SMALL_NOTES)
    remote = grading.vault("remote", SMALL_NOTES)
    resync(local, config=config, state_dir=grading.state("local"))
    state_dir = grading.state("remote")
    stream = results_stream(grading.prefix, vault_id(state_dir))
    grading.client.xadd(stream, {"payload": b'"not a result"'})
    log = grading.root / "resync.log"
    with running_workers(1, redis_url=grading.url, config=config, root=grading.root):
        process = grading.start_resync(remote, config, log, state_dir=state_dir)
        try:
            stuck = "reading grading results failed"
            wait_until(lambda: process.poll() is not None or stuck in output(log), timeout_s=WAIT_S)
            assert stuck not in output(log)
            text = finished(process, log)
        finally:
            stop(process)
    assert "dropped" in text
    assert vault_differences(local, remote) == []


def first_call_hangs(respond: Callable[[Recorded], Reply]) -> Callable[[Recorded], Reply]:
    """The first chat call gets no answer for a minute (a model wedged on it); others answer."""
    calls: list[Recorded] = []

    def answer(request: Recorded) -> Reply:
        calls.append(request)
        reply = respond(request)
        return dataclasses.replace(reply, delay_s=60.0) if len(calls) == 1 else reply

    return answer


def test_a_job_that_kills_its_worker_is_dead_lettered_and_the_resync_finishes(
    grading: Grading, llm_server: ScriptedLLMServer
) -> None:
    config = grading.config(
        **llm_sections(llm_server), grading_workers={"max_deliveries": 1, "reclaim_after_s": 0.3}
    )
    vault = grading.vault("remote", SMALL_NOTES)
    llm_server.responder = first_call_hangs(responder())
    log = grading.root / "resync.log"
    first = start_worker(
        "w1", redis_url=grading.url, config=config, root=grading.root, args=["--jobs", "1"],
        env=LLM_ENV,
    )  # fmt: skip
    process = grading.start_resync(vault, config, log, env=LLM_ENV)
    try:
        wait_until(lambda: len(llm_server.chat_requests) >= 1, timeout_s=WAIT_S)
        first.process.kill()  # dies in the middle of the job, as on an out-of-memory kill
        first.process.wait()
        with running_workers(
            1, redis_url=grading.url, config=config, root=grading.root, args=["--jobs", "1"],
            env=LLM_ENV, first=2,
        ):  # fmt: skip
            text = finished(process, log)
    finally:
        stop(process)
        stop(first.process)
    [letter] = dead_letters(grading.client, grading.prefix)
    assert letter[b"error"] == b"delivered 2 times without being acknowledged"
    assert letter[b"deliveries"] == b"2"
    assert letter[b"worker"] == b"w2"
    job = decode_job(letter[b"payload"])
    assert job.kind == "extract"
    [hung] = [i.block.block_id.partition("@")[0] for i in job.inputs]
    # The daemon was told: the block failed alone (retried later), the others were graded.
    [failure] = [line for line in text.splitlines() if "extraction failed" in line]
    assert hung in failure and "dead-lettered: delivered 2 times" in failure
    assert re.search(r"^blocks still queued +1$", text, re.M)
    note = parse_note((vault / "standup.md").read_text(encoding="utf-8"))
    assert {b.id: bool(b.scores) for b in note.blocks} == {b.id: b.id != hung for b in note.blocks}


def delayed(respond: Callable[[Recorded], Reply], delay_s: float) -> Callable[[Recorded], Reply]:
    return lambda request: dataclasses.replace(respond(request), delay_s=delay_s)


def test_a_result_delivered_twice_is_applied_once(
    grading: Grading, llm_server: ScriptedLLMServer
) -> None:
    config = grading.config(
        **llm_sections(llm_server), grading_workers={"reclaim_after_s": 0.2, "max_deliveries": 10}
    )
    local, remote = grading.vault("local", SMALL_NOTES), grading.vault("remote", SMALL_NOTES)
    original = all_versions(remote, SMALL_NOTES)
    llm_server.responder = responder()
    with running_workers(
        2, redis_url=grading.url, config=config, root=grading.root, args=["--jobs", "1"],
        env=LLM_ENV,
    ) as workers:  # fmt: skip
        # The same replies, given at once, while the workers start.
        resync(local, config=config, state_dir=grading.state("local"), env=LLM_ENV)
        # Slower than reclaim_after_s: an idle worker takes over the job another still grades.
        llm_server.responder = delayed(responder(), 0.7)
        wait_until(lambda: len(grading.worker_streams()) == 2, timeout_s=WAIT_S)
        resync(
            remote, config=config, state_dir=grading.state("remote"), redis_url=grading.url,
            env=LLM_ENV,
        )  # fmt: skip
        results = [
            decode_outcome(fields[b"payload"])
            for _, fields in stream_entries(grading.client, grading.prefix, "results")
        ]
        jobs = {o.key for o in results}
        assert len(results) > len(jobs), "some job was graded by both workers"
        assert any("took over" in w.output() for w in workers)

    assert vault_differences(local, remote) == []
    # Every block has claims: its score comments are written once, its ``ver`` goes up once.
    assert all_versions(remote, SMALL_NOTES) == {b: v + 1 for b, v in original.items()}


def test_publishing_waits_while_the_backlog_is_full(grading: Grading) -> None:
    max_backlog = 3
    config = grading.config(grading_workers={"max_backlog": max_backlog})
    local, remote = grading.vault("local"), grading.vault("remote")
    resync(local, config=config, state_dir=grading.state("local"))
    log = grading.root / "resync.log"
    process = grading.start_resync(remote, config, log, first=("--log-level", "INFO"))
    seen: list[int] = []

    def sample() -> int:
        work = streams(grading.client, grading.prefix, "work")
        seen.append(sum(backlog(grading.client, stream) for stream in work))
        return seen[-1]

    try:
        wait_until(lambda: sample() and "grading backlog full" in output(log), timeout_s=WAIT_S)
        # Until the daemon has waited 5 s without a result: by then it has looked again for the
        # jobs it waits on, and found room or not.
        wait_until(
            lambda: sample() is not None and "waiting for grading workers" in output(log),
            timeout_s=WAIT_S,
        )
        assert max(seen) <= max_backlog, f"backlog reached {max(seen)} without a worker"
        with running_workers(1, redis_url=grading.url, config=config, root=grading.root):
            deadline = time.monotonic() + WAIT_S
            while process.poll() is None and time.monotonic() < deadline:
                sample()
                time.sleep(0.02)
            finished(process, log)
    finally:
        stop(process)
    assert max(seen) <= max_backlog, f"backlog reached {max(seen)}"
    assert vault_differences(local, remote) == []


def test_a_resync_without_workers_never_imports_redis(grading: Grading) -> None:
    config = grading.config()
    vault = grading.vault("vault", SMALL_NOTES)
    script = (
        "import sys\n"
        "from aclarai.daemon.cli import main\n"
        f"code = main(['--config', {str(config)!r}, 'resync', {str(vault)!r}])\n"
        "assert code == 0, code\n"
        "loaded = sorted(m for m in sys.modules if m == 'redis' or m.startswith('redis.'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=process_env(grading.state("vault")),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "aclarai:entailed_score=" in (vault / "standup.md").read_text(encoding="utf-8")


def test_a_worker_takes_over_no_more_jobs_than_its_free_slots(grading: Grading) -> None:
    config = grading.config(grading_workers={"reclaim_after_s": 0.3})
    local, remote = grading.vault("local"), grading.vault("remote")
    resync(local, config=config, state_dir=grading.state("local"))
    log = grading.root / "resync.log"
    process = grading.start_resync(remote, config, log)
    try:
        wait_until(lambda: stream_entries(grading.client, grading.prefix, "work"), timeout_s=WAIT_S)
        [stream] = streams(grading.client, grading.prefix, "work")
        # A worker that read every job waiting and died: far more than a worker's two slots.
        ensure_group(grading.client, grading.url, stream, WORKERS_GROUP)
        taken = entries_of(grading.client.xreadgroup(WORKERS_GROUP, "ghost", {stream: ">"}))
        assert len(taken) > 2
        with running_workers(
            1, redis_url=grading.url, config=config, root=grading.root, args=("--jobs", "2")
        ) as [worker]:
            finished(process, log)
            assert worker.process.poll() is None, f"the worker died:\n{worker.output()}"
            assert "took over" in worker.output()
    finally:
        stop(process)
    assert vault_differences(local, remote) == []


def test_a_job_that_cannot_be_read_is_answered_so_its_daemon_does_not_wait(
    grading: Grading,
) -> None:
    config = grading.config()
    reply_to = f"{grading.prefix}:results:test"
    raw = json.dumps({"v": 1, "kind": "shred", "reply_to": reply_to}).encode()
    with running_workers(1, redis_url=grading.url, config=config, root=grading.root) as [worker]:
        stream = grading.worker_stream(worker)
        grading.client.set(job_key(grading.prefix, key_of(raw)), reply_to)
        grading.client.xadd(stream, {"payload": raw})
        wait_until(lambda: grading.client.xlen(reply_to) == 1, timeout_s=WAIT_S)
    [(_, answer)] = read_stream(grading.client, reply_to)
    told = decode_outcome(answer[b"payload"])
    assert told.key == key_of(raw)
    assert told.error == "dead-lettered: unreadable job: grader: expected a string"
    assert not grading.client.exists(job_key(grading.prefix, key_of(raw))), "the key is freed"


def test_a_result_for_text_edited_meanwhile_is_dropped_and_the_block_graded_again(
    grading: Grading,
) -> None:
    config = grading.config()
    local = grading.vault("local", SMALL_NOTES)
    remote = grading.vault("remote", SMALL_NOTES)
    edit_standup = lambda vault: (vault / "standup.md").write_text(  # noqa: E731
        (vault / "standup.md").read_text(encoding="utf-8").replace("v2.3", "v2.2"),
        encoding="utf-8",
    )
    edit_standup(local)
    resync(local, config=config, state_dir=grading.state("local"))
    log = grading.root / "resync.log"
    process = grading.start_resync(remote, config, log)
    try:
        wait_until(
            lambda: len(stream_entries(grading.client, grading.prefix, "work")) == 3,
            timeout_s=WAIT_S,
        )
        # The user edits a block while its work is out: the results are for the old text.
        edit_standup(remote)
        with running_workers(1, redis_url=grading.url, config=config, root=grading.root):
            process.wait(timeout=WAIT_S)
            text = (remote / "standup.md").read_text(encoding="utf-8")
            assert "rolled back to v2.2" in text, "the edit made meanwhile is kept"
            assert "v2.3" not in text
            resync(remote, config=config, state_dir=grading.state("remote"), redis_url=grading.url)
    finally:
        stop(process)
    first_pass = output(log)
    assert re.search(r"notes rewritten\s+0\n", first_pass), "the stale result wrote nothing"
    assert re.search(r"blocks still queued\s+3\n", first_pass), "its blocks wait to be graded"
    assert vault_differences(local, remote) == []
