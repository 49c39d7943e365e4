"""The loop that keeps a vault graded: the daemon (:mod:`.daemon`, ``aclarai watch``) and the
one-shot pass (:mod:`.resync`), the watcher that finds settled notes (:mod:`.watcher`) and the
path that syncs them (:mod:`.watch_path`), the
DirtyBlockConsumer that grades queued blocks and writes their scores back (:mod:`.consumer`; its
first stage in :mod:`.grading`, a take's records in :mod:`.take`), the commands that reach a
running daemon (:mod:`.handoff`), its record and watchdog word (:mod:`.liveness`) and systemd
(:mod:`.systemd`)."""

from aclarai.daemon.loop.consumer import DirtyBlockConsumer
from aclarai.daemon.loop.daemon import run_daemon
from aclarai.daemon.loop.resync import ResyncSummary, resync
from aclarai.daemon.loop.take import DrainStats
from aclarai.daemon.loop.watcher import watch_vault

__all__ = [
    "DirtyBlockConsumer",
    "DrainStats",
    "ResyncSummary",
    "resync",
    "run_daemon",
    "watch_vault",
]
