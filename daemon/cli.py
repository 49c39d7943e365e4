"""The ``aclarai`` command line: parse arguments, build objects, call one function.

Every command turns an :class:`AclaraiError` into one line on stderr and a non-zero exit:
75 (EX_TEMPFAIL, try again later) when another aclarai holds the vault or the graph store is
unreachable, 1 otherwise.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path

from aclarai.daemon.config import Config, load_config
from aclarai.daemon.lock import LockBusy
from aclarai.daemon.logs import setup_logging
from aclarai.parsers import AclaraiError, StoreUnavailable

log = logging.getLogger(__name__)

EX_TEMPFAIL = 75

Handler = Callable[[argparse.Namespace, Config], int]


def _vault(args: argparse.Namespace, config: Config) -> Path:
    raw = args.vault or config.vault.path
    if not raw:
        raise AclaraiError("no vault given: pass VAULT or set vault.path in the config")
    return Path(raw).expanduser()


def cmd_resync(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.control import hand_resync_to_daemon
    from aclarai.daemon.resync import format_summary, resync, terminal_progress

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
    summary = resync(
        config,
        vault,
        dry_run=args.dry_run,
        reevaluate=args.reevaluate,
        lock_timeout_s=args.wait,
        progress=terminal_progress("scanning"),
    )
    if sys.stderr.isatty():
        sys.stderr.write("\r")
    print(format_summary(summary))
    if summary.store_error is not None:
        return EX_TEMPFAIL
    return 0 if summary.ok else 1


def cmd_status(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.status import collect_status, format_status

    print(format_status(collect_status(config, _vault(args, config), verify=args.verify)))
    return 0


def cmd_evaluate(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.batch_eval import run_batch, terminal_counter
    from aclarai.daemon.factory import build_evaluator

    state_dir = config.state_dir_for(Path(config.vault.path or "."))
    source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115
    with source, build_evaluator(config, state_dir) as evaluator:
        errors = run_batch(source, sys.stdout, evaluator, progress=terminal_counter())
    if errors:
        log.warning("%d line(s) could not be evaluated", errors)
    return 0


def cmd_watch(args: argparse.Namespace, config: Config) -> int:
    import gc

    from aclarai.daemon.daemon import run_daemon

    # Everything imported lives as long as the service: frozen, it costs the collector nothing,
    # neither in pauses nor at exit (seconds otherwise, against a 10 s stop budget).
    gc.freeze()
    return run_daemon(config, _vault(args, config))


def cmd_pause(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.control import set_paused

    paused = args.command == "pause"
    set_paused(config, _vault(args, config), paused)
    print(
        "paused: watching and queueing go on; no evaluation or write-back" if paused else "resumed"
    )
    return 0


def cmd_install_service(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.systemd import install_service

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
    from aclarai.daemon.api import serve

    serve(config, host=args.host, port=args.port)
    return 0


def cmd_consume(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.streams import consume

    stats = consume(config, consumer=args.name, burst=args.burst)
    log.info("consumer stopped: %s", stats)
    return 0


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

    p = sub.add_parser("status", help="daemon, queue, dead letters and graph counts")
    p.add_argument("vault", nargs="?")
    p.add_argument("--verify", action="store_true", help="recompute hashes from the vault")
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("evaluate", help='score {"id","source","claim"} JSON lines to stdout')
    p.add_argument("file", help="JSON-lines file, or - for standard input")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.set_defaults(handler=cmd_evaluate)

    p = sub.add_parser("serve", help="the evaluation HTTP API (service.host:service.port)")
    p.add_argument("--host", help="address to bind (default service.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default service.port, 18081)")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("consume", help="evaluate events from the Redis Stream (redis.*)")
    p.add_argument("--name", help="consumer name in the group (default <host>-<pid>)")
    p.add_argument("--burst", action="store_true", help="drain the stream, then exit")
    p.add_argument("--backend", choices=["offline", "llm"], help="evaluator (model.backend)")
    p.set_defaults(handler=cmd_consume)
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    overrides: dict[str, object] = {}
    if getattr(args, "graph", None):
        overrides["graph.backend"] = args.graph
    if getattr(args, "backend", None):
        overrides["model.backend"] = args.backend
    if getattr(args, "polling", False):
        overrides["watch.polling"] = True
    if args.log_level:
        overrides["logging.level"] = args.log_level
    if args.log_json:
        overrides["logging.format"] = "json"
    return overrides


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, overrides=_overrides(args))
        setup_logging(config.logging.level, config.logging.format)
        handler: Handler = args.handler
        return handler(args, config)
    except LockBusy as exc:
        print(f"aclarai: another aclarai holds this vault: {exc}", file=sys.stderr)
        return EX_TEMPFAIL
    except StoreUnavailable as exc:
        # Driver messages span lines; the user gets one.
        message = " ".join(str(exc).split())
        print(f"aclarai: graph store unavailable, try again later: {message}", file=sys.stderr)
        return EX_TEMPFAIL
    except AclaraiError as exc:
        print(f"aclarai: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
