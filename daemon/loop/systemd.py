"""Running under systemd: the ``sd_notify`` protocol and the user unit.

``sd_notify`` is one datagram to the ``AF_UNIX`` socket named by ``NOTIFY_SOCKET`` (a leading
``@`` means the abstract namespace), so no library is needed. The daemon sends ``READY=1`` once it
watches the vault, ``WATCHDOG=1`` from its main loop while every part of it moves (a hung loop,
consumer, watcher or model call stops the pings, see :mod:`aclarai.daemon.loop.liveness`, and
systemd restarts the service), ``STATUS=`` lines and ``STOPPING=1``.
"""

from __future__ import annotations

import logging
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger(__name__)

SERVICE_NAME = "aclarai.service"
ENV_FILE_NAME = "aclarai.env"
WATCHDOG_SEC = 60


def sd_notify(socket_path: str | None, message: str) -> bool:
    """Send one notification to systemd; ``False`` when not run by systemd or it failed."""
    if not socket_path:
        return False
    address = "\0" + socket_path[1:] if socket_path.startswith("@") else socket_path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode("utf-8"))
    except OSError as exc:
        log.warning("sd_notify to %s failed: %s", socket_path, exc)
        return False
    return True


class Notifier:
    """The daemon's side of ``Type=notify``: a no-op outside systemd."""

    def __init__(self, socket_path: str | None, watchdog_s: float | None) -> None:
        self.socket_path = socket_path
        self.watchdog_s = watchdog_s
        self._pinged_at = float("-inf")

    def ready(self, status: str) -> None:
        sd_notify(self.socket_path, f"READY=1\nSTATUS={status}")

    def status(self, text: str) -> None:
        sd_notify(self.socket_path, f"STATUS={text}")

    def ping(self) -> None:
        """``WATCHDOG=1``, at most every third of the watchdog interval."""
        if self.watchdog_s is None:
            return
        now = time.monotonic()
        if now - self._pinged_at >= self.watchdog_s / 3:
            self._pinged_at = now
            sd_notify(self.socket_path, "WATCHDOG=1")

    def stopping(self) -> None:
        sd_notify(self.socket_path, "STOPPING=1\nSTATUS=stopping")


def _quote(arg: str) -> str:
    """One ``ExecStart=`` word: systemd expands ``%`` specifiers and ``$`` variables."""
    escaped = arg.replace("%", "%%").replace("$", "$$")
    if escaped and not any(c in escaped for c in " \t\"\\'"):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def service_command(vault_root: Path, config_path: Path | None = None) -> list[str]:
    """The daemon's command line, with this interpreter (systemd's PATH may lack ``aclarai``)."""
    args = [sys.executable, "-m", "aclarai.daemon.cli"]
    if config_path is not None:
        args += ["--config", str(config_path.expanduser().resolve())]
    return [*args, "watch", str(vault_root.expanduser().resolve())]


def unit_text(command: Sequence[str], env_file: Path) -> str:
    """The user unit: restarts on failure, notify + watchdog, low CPU and I/O priority."""
    vault = command[-1]
    return f"""\
# Written by `aclarai install-service`. After editing: systemctl --user daemon-reload
[Unit]
Description=aclarai: keep the vault {vault} and its knowledge graph in step
After=default.target

[Service]
Type=notify
NotifyAccess=main
ExecStart={" ".join(_quote(a) for a in command)}
# Secrets (OPENAI_API_KEY=…, NEO4J_PASSWORD=…), one VAR=value a line; optional.
EnvironmentFile=-{env_file}
Environment=PYTHONUNBUFFERED=1
Restart=on-failure
RestartSec=5
WatchdogSec={WATCHDOG_SEC}
TimeoutStopSec=15
Nice=10
IOSchedulingClass=idle

[Install]
WantedBy=default.target
"""


def install_service(
    config_home: Path, vault_root: Path, *, config_path: Path | None = None, write: bool = True
) -> tuple[Path, str]:
    """Write ``<config home>/systemd/user/aclarai.service`` (unless ``write`` is false).

    Returns:
        The unit's path and its text.
    """
    unit_path = config_home / "systemd" / "user" / SERVICE_NAME
    env_file = config_home / "aclarai" / ENV_FILE_NAME
    text = unit_text(service_command(vault_root, config_path), env_file)
    if write:
        unit_path.parent.mkdir(parents=True, exist_ok=True)
        unit_path.write_text(text, encoding="utf-8")
        log.info("wrote %s", unit_path)
    return unit_path, text
