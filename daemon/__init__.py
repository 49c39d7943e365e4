"""Orchestration and I/O: CLI, configuration, vault walking, safe writes, resync, watcher,
durable queue, consumer, HTTP service and Redis consumer."""

from aclarai.daemon.config import Config, load_config

__all__ = ["Config", "load_config"]
