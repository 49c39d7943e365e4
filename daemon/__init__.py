"""All of aclarai's I/O. Start at :mod:`.cli` (every command: parse, build, call one function),
:mod:`.config` (the one configuration object) and :mod:`.factory` (configuration to concrete
parts). The rooms, each importing only the rooms after it (the factory lies between
``reports/`` and ``intake/``: the rooms above build their parts with it, and it builds from the
two below):

- ``loop/``: the daemon and ``aclarai resync``, the watcher, the DirtyBlockConsumer;
- ``service/``: the evaluation service (HTTP, the Redis Stream consumer, MCP, evaluate,
  validate);
- ``reports/``: what people read (status, claims, the dashboard note);
- ``intake/``: the ways notes come in (chat exports, the inbox, adopting ordinary notes);
- ``vault/``: one vault on disk and its state (notes read, written and synced, the durable
  queue, the lock, the control rows).
"""

from aclarai.daemon.config import Config, load_config

__all__ = ["Config", "load_config"]
