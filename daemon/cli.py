"""The ``aclarai`` command line: parse arguments, build objects, call one function.

Every command turns an :class:`AclaraiError` into one line on stderr and a non-zero exit.
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
from aclarai.parsers import AclaraiError

log = logging.getLogger(__name__)

Handler = Callable[[argparse.Namespace, Config], int]


def _vault(args: argparse.Namespace, config: Config) -> Path:
    raw = args.vault or config.vault.path
    if not raw:
        raise AclaraiError("no vault given: pass VAULT or set vault.path in the config")
    return Path(raw).expanduser()


def cmd_resync(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.resync import format_summary, resync, terminal_progress

    summary = resync(
        config,
        _vault(args, config),
        dry_run=args.dry_run,
        reevaluate=args.reevaluate,
        lock_timeout_s=args.wait,
        progress=terminal_progress("scanning"),
    )
    if sys.stderr.isatty():
        sys.stderr.write("\r")
    print(format_summary(summary))
    return 0 if summary.ok else 1


def cmd_status(args: argparse.Namespace, config: Config) -> int:
    from aclarai.daemon.status import collect_status, format_status

    print(format_status(collect_status(config, _vault(args, config), verify=args.verify)))
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
    p.add_argument("--wait", type=float, default=None, metavar="S",
                   help="seconds to wait for a running daemon's lock (default: forever)")
    p.set_defaults(handler=cmd_resync)

    p = sub.add_parser("status", help="daemon, queue, dead letters and graph counts")
    p.add_argument("vault", nargs="?")
    p.add_argument("--verify", action="store_true", help="recompute hashes from the vault")
    p.set_defaults(handler=cmd_status)
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    overrides: dict[str, object] = {}
    if getattr(args, "graph", None):
        overrides["graph.backend"] = args.graph
    if getattr(args, "backend", None):
        overrides["model.backend"] = args.backend
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
        return 75
    except AclaraiError as exc:
        print(f"aclarai: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
