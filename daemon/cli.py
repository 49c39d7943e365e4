"""The ``aclarai`` command line: parse arguments, build objects, call one function.

Every command turns an :class:`AclaraiError` into one line on stderr and a non-zero exit:
75 (EX_TEMPFAIL, try again later) when another aclarai holds the vault or the graph store is
unreachable, 69 (EX_UNAVAILABLE) when ``resync``, ``evaluate``, ``consume --burst`` or
``worker --burst`` found the model unreachable or every extraction or evaluation failed, 1
otherwise. A command whose reader goes away before it is done (``aclarai evaluate big.jsonl |
head -1``) stops quietly with 141, the status of a Unix tool killed by SIGPIPE, so ``set -o
pipefail`` scripts see the cut.
``status --wait-idle --timeout S`` exits 124 (as ``timeout(1)``) when S passed before every
change seen was graded.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import BinaryIO

from aclarai.daemon.config import Config, load_config
from aclarai.daemon.logs import setup_logging
from aclarai.parsers import AclaraiError, EvaluatorUnavailable, StoreUnavailable, VaultBusy

log = logging.getLogger(__name__)

EX_UNAVAILABLE = 69
EX_TEMPFAIL = 75
EX_BROKEN_PIPE = 128 + 13
EX_NOT_GRADED = 124
EX_CHECK_ERROR = 2
"""``status --wait-idle``: the timeout passed before every change was graded (as timeout(1))."""

Handler = Callable[[argparse.Namespace, Config], int]

EXIT_STATUS: tuple[tuple[type[AclaraiError], int, str], ...] = (
    (VaultBusy, EX_TEMPFAIL, "another aclarai holds this vault: "),
    (StoreUnavailable, EX_TEMPFAIL, "graph store unavailable, try again later: "),
    (EvaluatorUnavailable, EX_UNAVAILABLE, "model endpoint unavailable, try again later: "),
    (AclaraiError, 1, ""),
)
"""The one place an error becomes an exit status: the first class that matches wins."""


def exit_status(exc: AclaraiError) -> tuple[int, str]:
    """The exit status for ``exc`` and the words that go before its message."""
    return next((status, prefix) for kind, status, prefix in EXIT_STATUS if isinstance(exc, kind))


def _vault(args: argparse.Namespace, config: Config) -> Path:
    raw = args.vault or config.vault.path
    if not raw:
        raise AclaraiError("no vault given: pass VAULT or set vault.path in the config")
    return Path(raw).expanduser()


def _bound(args: argparse.Namespace, config: Config) -> Config:
    """``config`` bound to the vault of a command that works on one: every setting naming a
    place in the vault checked to lie inside it before anything is read or written."""
    from aclarai.daemon.vault.bounds import bind_to_vault

    if not hasattr(args, "vault"):
        return config
    raw = args.vault or config.vault.path
    return bind_to_vault(config, Path(raw)) if raw else config


def cmd_resync(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.loop.handoff import hand_resync_to_daemon
    from aclarai.daemon.loop.resync import format_summary, resync
    from aclarai.daemon.progress import progress_shown

    vault = _vault(args, config)
    if not args.log_level:
        # A one-shot pass reports through its summary; per-block lines are for the daemon.
        logging.getLogger("aclarai").setLevel(logging.WARNING)
    answer = hand_resync_to_daemon(
        config, vault, dry_run=args.dry_run, reevaluate=args.reevaluate, timeout_s=args.wait
    )
    if answer is not None:
        print(answer.text)
        return 0 if answer.ok else 1
    with progress_shown("syncing", unit="notes") as progress:
        summary = resync(
            config,
            vault,
            dry_run=args.dry_run,
            reevaluate=args.reevaluate,
            lock_timeout_s=args.wait,
            progress=progress,
        )
    print(format_summary(summary))
    if summary.store_error is not None:
        return EX_TEMPFAIL
    if summary.model_error is not None:
        return EX_UNAVAILABLE
    return 0 if summary.ok else 1


def cmd_status(args: argparse.Namespace, config: Config) -> int:
    import json

    from aclarai.daemon.reports.idle import wait_idle
    from aclarai.daemon.reports.status import collect_status, format_status, status_json

    vault = _vault(args, config)
    graded = not args.wait_idle or wait_idle(
        config,
        vault,
        timeout_s=args.timeout,
        say=lambda line: print(f"aclarai: {line}", file=sys.stderr, flush=True),
    )
    status = collect_status(config, vault, verify=args.verify)
    print(json.dumps(status_json(status)) if args.json else format_status(status))
    return 0 if graded else EX_NOT_GRADED


def cmd_claims(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.reports.claims import claim_json, format_claim, list_claims

    refs = list_claims(
        config, _vault(args, config), below=args.below, note=args.note, failed=args.null
    )
    for ref in refs:
        print(claim_json(ref) if args.json else format_claim(ref))
    return 0


def cmd_search(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.search import SearchFilter
    from aclarai.daemon.search.output import footer, format_result, hit_json
    from aclarai.daemon.search.session import VaultSearch

    if not args.query.strip():
        raise AclaraiError("the query is empty")
    where = SearchFilter(
        min_quality=args.min_quality, include_null=args.include_null or None, scope=args.scope or ""
    )
    with VaultSearch(config, _vault(args, config)) as vault:
        result = vault.search(args.query, limit=args.limit, where=where)
    if args.json:
        for hit in result.hits:
            print(hit_json(hit))
        for line in footer(result):
            print(line, file=sys.stderr)
    else:
        print(format_result(result))
    return 0


def cmd_check(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.search.session import VaultSearch
    from aclarai.daemon.service.check import check_answer, check_json, format_check
    from aclarai.daemon.service.core import build_service_core

    try:
        with VaultSearch(config, _vault(args, config)) as vault:
            core = build_service_core(config)
            try:
                result = check_answer(vault, core, args.question, args.answer)
            finally:
                core.close()
    except AclaraiError as exc:
        # 1 means "review or fail" here: an error that would exit 1 exits 2.
        status, prefix = exit_status(exc)
        print(f"aclarai: {prefix}{' '.join(str(exc).split())}", file=sys.stderr)
        return EX_CHECK_ERROR if status == 1 else status
    print(check_json(result) if args.json else format_check(result))
    return 0 if result.passed else 1


def cmd_evaluate(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.factory import build_evaluator
    from aclarai.daemon.progress import progress_shown
    from aclarai.daemon.service.batch_eval import run_batch

    state_dir = config.state_dir_for(Path(config.vault.path or "."))
    source = _open_input(args.file)
    if args.events:
        return _evaluate_events(args, config, source)
    with (
        source,
        build_evaluator(config, state_dir) as evaluator,
        progress_shown("evaluating", unit="lines") as progress,
    ):
        counts = run_batch(source, sys.stdout, evaluator, progress=progress)
    if counts.errors:
        log.warning("%d line(s) could not be evaluated", counts.errors)
    if counts.evaluated and counts.failed == counts.evaluated:
        log.error("every evaluation failed (%d): is the model endpoint up?", counts.failed)
        return EX_UNAVAILABLE
    return 0


def _open_input(name: str) -> BinaryIO:
    try:
        return sys.stdin.buffer if name == "-" else open(name, "rb")
    except OSError as exc:
        raise AclaraiError(f"cannot read {name}: {exc.strerror or exc}") from exc


def _evaluate_events(args: argparse.Namespace, config: Config, source: BinaryIO) -> int:
    from aclarai.daemon.service.answer_batch import format_event_summary, run_event_batch
    from aclarai.daemon.service.core import build_service_core

    core = build_service_core(config)
    try:
        with source:
            summary = run_event_batch(source, sys.stdout, core, workers=args.workers)
    finally:
        core.close()
    if args.summary:
        print(format_event_summary(summary), file=sys.stderr)
    if summary.errors:
        log.warning("%d event(s) could not be evaluated", summary.errors)
    if summary.unavailable and not summary.evaluated:
        log.error("the model endpoint could not be reached for any event")
        return EX_UNAVAILABLE
    return 0


def cmd_validate(args: argparse.Namespace, config: Config) -> int:
    import json

    from aclarai.daemon.service.core import build_service_core
    from aclarai.daemon.service.validate import format_report, validate

    source = _open_input(args.file)
    core = build_service_core(config)
    try:
        with source:
            report = validate(
                source,
                core,
                claim_threshold=config.threshold.claim_quality,
                threshold=args.threshold,
                workers=args.workers,
            )
    finally:
        core.close()
    if args.report:
        Path(args.report).write_text(json.dumps(report.as_dict(), indent=2) + "\n")
    print(json.dumps(report.as_dict()) if args.json else format_report(report))
    return 0 if report.passed else 1


def cmd_mcp(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.service.mcp import run_mcp

    return run_mcp(config)


def cmd_watch(args: argparse.Namespace, config: Config) -> int:
    import gc

    from aclarai.daemon.loop.daemon import run_daemon

    # Everything imported lives as long as the service: frozen, it costs the collector nothing,
    # neither in pauses nor at exit (seconds otherwise, against a 10 s stop budget).
    gc.freeze()
    return run_daemon(config, _vault(args, config))


def cmd_pause(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.loop.handoff import set_paused

    paused = args.command == "pause"
    set_paused(config, _vault(args, config), paused)
    print(
        "paused: watching and queueing go on; no evaluation or write-back" if paused else "resumed"
    )
    return 0


def cmd_install_service(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.loop.systemd import install_service

    vault = _vault(args, config)
    if not vault.is_dir():
        raise AclaraiError(f"vault {vault} does not exist or is not a folder")
    path, text = install_service(
        config.config_home(), vault, config_path=args.config, write=not args.print
    )
    if args.print:
        print(text, end="")
    else:
        print(
            f"wrote {path}\nstart it: systemctl --user daemon-reload && "
            "systemctl --user enable --now aclarai\nlogs: journalctl --user -u aclarai -f"
        )
    return 0


def cmd_serve(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.service.api import serve

    if args.vault:
        config = config.with_overrides({"vault.path": str(Path(args.vault).expanduser())})
    serve(config, host=args.host, port=args.port, allow_no_token=args.insecure_no_token)
    return 0


def cmd_consume(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.service.consume import run_consumer

    stats = run_consumer(config, consumer=args.name, burst=args.burst)
    log.info("consumer stopped: %s", stats)
    return EX_UNAVAILABLE if stats.model_outages else 0


def cmd_worker(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.factory import build_local_agents, reclaim_after_s
    from aclarai.daemon.workers.worker import run_worker

    state_dir = config.worker_state_dir()
    stats = run_worker(
        config,
        lambda reevaluate: build_local_agents(config, state_dir, None, reevaluate=reevaluate),
        reclaim_after_s=reclaim_after_s(config),
        name=args.name,
        burst=args.burst,
    )
    log.info("grading worker stopped: %s", stats)
    return EX_UNAVAILABLE if stats.model_outages else 0


def cmd_import(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.factory import build_transcript_reader
    from aclarai.daemon.intake.importer import (
        format_report,
        import_limits,
        import_sources,
        progress_display,
    )
    from aclarai.daemon.vault.writer import remove_stale_temp_files

    vault = _vault(args, config)
    into = config.import_.folder
    if not args.dry_run:
        remove_stale_temp_files(vault / into)
    fallback = build_transcript_reader(config, config.state_dir_for(vault))
    try:
        report = import_sources(
            [Path(source) for source in args.sources],
            vault,
            into,
            limits=import_limits(config),
            format_name=args.format,
            dry_run=args.dry_run,
            progress=progress_display("importing"),
            fallback=fallback,
        )
    finally:
        if fallback is not None:
            fallback.client.close()
    for error in report.errors:
        print(f"aclarai: {error}", file=sys.stderr)
    print(format_report(report))
    return report.exit_status


def cmd_adopt(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.intake.adopt import adopt_files, format_adopt_report
    from aclarai.daemon.progress import progress_shown
    from aclarai.daemon.vault.writer import remove_stale_temp_files

    if not args.dry_run:
        for path in args.paths:
            remove_stale_temp_files(Path(path))
    with progress_shown("adopting", unit="notes") as progress:
        report = adopt_files(
            [Path(path) for path in args.paths],
            dry_run=args.dry_run,
            progress=progress,
            dashboard=config.dashboard.path,
        )
    for error in report.errors:
        print(f"aclarai: {error}", file=sys.stderr)
    print(format_adopt_report(report))
    return 1 if report.errors else 0


def cmd_unadopt(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.intake.unadopt import (
        folders_adopting,
        format_unadopt_report,
        unadopt_files,
    )
    from aclarai.daemon.vault.writer import remove_stale_temp_files

    paths = [Path(path) for path in args.paths]
    if not args.dry_run:
        for path in paths:
            remove_stale_temp_files(path)
    report = unadopt_files(paths, dry_run=args.dry_run)
    for error in report.errors:
        print(f"aclarai: {error}", file=sys.stderr)
    for folder in folders_adopting(paths, config.adopt.folders):
        print(f"aclarai: {folder} is in adopt.folders: resync adopts it again", file=sys.stderr)
    print(format_unadopt_report(report))
    return 1 if report.errors else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aclarai",
        description="Keep a Markdown vault and its knowledge graph in step, and grade every claim.",
    )
    parser.add_argument("--version", action="version", version=f"aclarai {version('aclarai')}")
    parser.add_argument("--config", type=Path, help="YAML config file (default: XDG config dir)")
    parser.add_argument("--log-level", help="DEBUG, INFO, WARNING … (overrides logging.level)")
    parser.add_argument("--log-json", action="store_true", help="log JSON lines")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("resync", help="one pass over the vault: sync, evaluate, write scores")
    p.add_argument("vault", nargs="?", help="vault folder (default: vault.path)")
    p.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    p.add_argument("--reevaluate", action="store_true", help="re-score every claim, bypass cache")
    p.add_argument("--graph", choices=["sqlite", "neo4j"], help="graph backend (graph.backend)")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.add_argument(
        "--redis", metavar="URL", help="grade through workers (grading_workers.redis_url)"
    )
    p.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="S",
        help="seconds to wait for a running daemon's lock (default: forever)",
    )
    p.set_defaults(handler=cmd_resync)

    p = sub.add_parser("watch", help="run the daemon: watch the vault, score what changes")
    p.add_argument("vault", nargs="?", help="vault folder (default: vault.path)")
    p.add_argument("--polling", action="store_true", help="poll instead of inotify (watch.polling)")
    p.add_argument(
        "--redis", metavar="URL", help="grade through workers (grading_workers.redis_url)"
    )
    p.set_defaults(handler=cmd_watch)

    for name, text in (
        ("pause", "stop evaluation and write-backs; keep watching and queueing"),
        ("resume", "undo `aclarai pause`"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("vault", nargs="?")
        p.set_defaults(handler=cmd_pause)

    p = sub.add_parser("install-service", help="write the systemd user unit for the daemon")
    p.add_argument("vault", nargs="?")
    p.add_argument("--print", action="store_true", help="print the unit instead of writing it")
    p.set_defaults(handler=cmd_install_service)

    p = sub.add_parser(
        "status",
        help="daemon, activity, what is not graded yet, queue, dead letters and graph counts",
        description="Exit 0; with --wait-idle, 0 once every change seen so far is graded and "
        f"{EX_NOT_GRADED} when --timeout passes first.",
    )
    p.add_argument("vault", nargs="?")
    p.add_argument("--verify", action="store_true", help="recompute hashes from the vault")
    p.add_argument("--json", action="store_true", help="one JSON object (its keys: docs/daemon.md)")
    p.add_argument(
        "--wait-idle",
        action="store_true",
        help=f"first wait until every change seen so far is graded (exit {EX_NOT_GRADED} "
        "if --timeout passes first)",
    )
    p.add_argument(
        "--timeout", type=float, metavar="S", help="seconds --wait-idle waits (default: forever)"
    )
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("claims", help="the claims to look at: below the quality threshold")
    p.add_argument("vault", nargs="?")
    p.add_argument("--below", type=float, metavar="Q", help="quality (threshold.claim_quality)")
    p.add_argument("--note", metavar="PATH", help="only this note's claims")
    p.add_argument("--null", action="store_true", help="the failed evaluations (null scores)")
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.set_defaults(handler=cmd_claims)

    p = sub.add_parser("search", help="the vault's blocks and claims that answer a query")
    p.add_argument("vault", nargs="?")
    p.add_argument("query", help="what to look for, in your own words")
    p.add_argument("--limit", type=int, metavar="N", help="at most N hits (search.limit)")
    p.add_argument("--min-quality", type=float, metavar="Q", help="only claims of quality >= Q")
    p.add_argument(
        "--include-null", action="store_true", help="keep failed (null) grades under --min-quality"
    )
    p.add_argument("--in", dest="scope", metavar="PATH", help="only this note or folder")
    p.add_argument("--json", action="store_true", help="one JSON object a hit")
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("check", help="is an answer consistent with the vault? (exit 0: pass)")
    p.add_argument("vault", nargs="?")
    p.add_argument("--question", required=True, help="the question the answer answers")
    p.add_argument("--answer", required=True, help="the answer to check against the notes")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(handler=cmd_check)

    p = sub.add_parser("import", help="chat exports (files, folders, zips) into Tier 1 notes")
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="export file, folder or .zip")
    p.add_argument("--vault", help="vault folder (default: vault.path)")
    p.add_argument("--into", metavar="FOLDER", help="vault folder for the notes (import.folder)")
    p.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    p.add_argument("--format", metavar="NAME", help="read every source as this format")
    p.set_defaults(handler=cmd_import)

    p = sub.add_parser(
        "adopt",
        help="give the paragraphs and list items of notes block ids",
        description="Add an id comment and an ^anchor after each paragraph and list item of "
        "ordinary notes (two lines; one when it ends in your own ^id), so resync grades them. "
        "Never written: the vault's template folder, the dashboard, empty list items, $$ math, "
        "%% comments. `aclarai unadopt PATH` takes it all out again.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="note or folder of notes")
    p.add_argument("--dry-run", action="store_true", help="list what would be marked")
    p.set_defaults(handler=cmd_adopt)

    p = sub.add_parser(
        "unadopt",
        help="undo adopt: take out the ids, anchors and scores adopt and resync added",
        description="Take out of ordinary notes exactly the lines `aclarai adopt` and the score "
        "write-back added (id comments, their ^blk- anchors, block=start lines, score comments), "
        "byte for byte; a paragraph's own ^my-id stays. The next resync forgets the blocks. "
        "Conversation notes are left alone.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="note or folder of notes")
    p.add_argument("--dry-run", action="store_true", help="list what would be taken out")
    p.set_defaults(handler=cmd_unadopt)

    p = sub.add_parser("evaluate", help='score {"id","source","claim"} JSON lines to stdout')
    p.add_argument("file", help="JSON-lines file, or - for standard input")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.add_argument(
        "--events",
        action="store_true",
        help="the lines are answer events (the /api/v1/evaluate request); print its responses",
    )
    p.add_argument("--workers", type=int, default=4, help="events evaluated at once (--events)")
    p.add_argument("--summary", action="store_true", help="counts per verdict on stderr")
    p.set_defaults(handler=cmd_evaluate)

    p = sub.add_parser("mcp", help="the evaluation tools for AI assistants (MCP over stdio)")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.set_defaults(handler=cmd_mcp)

    p = sub.add_parser("validate", help="agreement of the evaluator with human labels")
    p.add_argument("file", help="labelled JSON lines (answer events or claim pairs), or -")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.add_argument(
        "--threshold",
        type=float,
        metavar="TAU",
        help="exit 1 when answer agreement or claim AUROC is below this",
    )
    p.add_argument("--workers", type=int, default=4, help="answer events evaluated at once")
    p.add_argument("--report", metavar="FILE", help="also write the JSON report to FILE")
    p.add_argument("--json", action="store_true", help="print the JSON report, not the table")
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("serve", help="the evaluation HTTP API (service.host:service.port)")
    p.add_argument("--host", help="address to bind (default service.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default service.port, 18081)")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.add_argument(
        "--vault",
        metavar="PATH",
        help="the synced vault /api/v1/search and /api/v1/check use (default: vault.path)",
    )
    p.add_argument(
        "--insecure-no-token",
        action="store_true",
        help="serve a non-loopback address without service.token_env (anyone may call it)",
    )
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("consume", help="evaluate events from the Redis Stream (eval_stream.*)")
    p.add_argument("--name", help="consumer name in the group (default <host>-<pid>)")
    p.add_argument("--burst", action="store_true", help="drain the stream, then exit")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.set_defaults(handler=cmd_consume)

    p = sub.add_parser(
        "worker",
        help="grade the vault daemons' work from Redis (grading_workers.*) with this machine's "
        "model",
    )
    p.add_argument("--redis", metavar="URL", help="the Redis server (grading_workers.redis_url)")
    p.add_argument("--name", help="worker name in the group (default <host>-<pid>)")
    p.add_argument(
        "--jobs", type=int, metavar="N", help="jobs at once (grading_workers.jobs_per_worker)"
    )
    p.add_argument("--burst", action="store_true", help="grade what is waiting, then exit")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.set_defaults(handler=cmd_worker)
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    overrides: dict[str, object] = {}
    if getattr(args, "graph", None):
        overrides["graph.backend"] = args.graph
    if getattr(args, "backend", None):
        overrides["model.backend"] = args.backend
    if getattr(args, "polling", False):
        overrides["watch.polling"] = True
    if getattr(args, "redis", None):
        overrides["grading_workers.redis_url"] = args.redis
    if getattr(args, "into", None):
        overrides["import.folder"] = args.into
    if getattr(args, "jobs", None) is not None:
        overrides["grading_workers.jobs_per_worker"] = args.jobs
    if args.log_level:
        overrides["logging.level"] = args.log_level
    if args.log_json:
        overrides["logging.format"] = "json"
    return overrides


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        # Logging first with its defaults: loading may warn (an old key name) before the
        # configuration says how to log.
        setup_logging()
        config = _bound(args, load_config(args.config, overrides=_overrides(args)))
        setup_logging(config.logging.level, config.logging.format)
        handler: Handler = args.handler
        code = handler(args, config)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Python would flush stdout again at exit and fail again: point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EX_BROKEN_PIPE
    except AclaraiError as exc:
        status, prefix = exit_status(exc)
        # Driver messages span lines; the user gets one.
        print(f"aclarai: {prefix}{' '.join(str(exc).split())}", file=sys.stderr)
        return status
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
