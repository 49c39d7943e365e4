"""All of aclarai's I/O. Start at :mod:`.cli` (every command: parse, build, call one function),
:mod:`.config` (the one configuration object) and :mod:`.factory` (configuration to concrete
parts). The rooms, each importing only the rooms after it (the factory lies between
``reports/`` and ``workers/``: the rooms above build their parts with it, and it builds from
the rooms below):

- ``loop/``: the daemon and ``aclarai resync``, the watcher, the DirtyBlockConsumer;
- ``service/``: the evaluation service (HTTP, the Redis Stream consumer, MCP, evaluate,
  validate);
- ``reports/``: what people read (status, claims, the dashboard note);
- ``workers/``: grading on several machines (``aclarai worker``, the daemon's publisher, the
  jobs on the wire, the workers' heartbeats);
- ``intake/``: the ways notes come in (chat exports, the inbox, adopting ordinary notes);
- ``vault/``: one vault on disk and its state (notes read, written and synced, the durable
  queue, the lock, the control rows).

Below the rooms, :mod:`.stream_loop` (the one Redis Streams consumer loop), then
:mod:`.config`, :mod:`.logs`, :mod:`.progress` and :mod:`.redis_link`.
"""

from aclarai.daemon.config import Config, load_config

__all__ = ["Config", "load_config"]
