"""All of aclarai's I/O: the CLI, configuration, the vault and its one note-sync path, the
durable queue, the DirtyBlockConsumer, the file writer, the watch loop, import and the dashboard;
``service/`` holds the evaluation service (HTTP, the Redis Stream worker, batch evaluation, MCP)."""

from aclarai.daemon.config import Config, load_config

__all__ = ["Config", "load_config"]
