"""systemd notifications (``Type=notify``), written by hand: one datagram to ``$NOTIFY_SOCKET``.

No libsystemd binding is needed for four messages. ``@name`` addresses are Linux abstract sockets
(leading NUL byte). The watchdog is pinged from the main loop, never from a helper thread, so a hung
loop is restarted by systemd instead of being masked. Every function is a no-op outside systemd.
"""

from __future__ import annotations

import os
import socket
import time


class Notifier:
    """sd_notify client. ``watchdog_interval`` is half of ``WatchdogSec`` (systemd's advice) or None."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = dict(os.environ) if environ is None else environ
        self.address = env.get("NOTIFY_SOCKET", "")
        self.watchdog_interval = _watchdog_interval(env)
        self._last_ping = 0.0
        self.errors = 0

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, *fields: str) -> bool:
        """Send ``KEY=value`` lines as one datagram; False (and counted) when it could not be sent."""
        if not self.address:
            return False
        addr = self.address
        if addr.startswith("@"):
            addr = "\0" + addr[1:]
        elif not addr.startswith("/"):
            self.errors += 1
            return False  # systemd only uses absolute paths and abstract names
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(addr)
                sock.sendall("\n".join(fields).encode("utf-8"))
        except OSError:
            self.errors += 1
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1", f"MAINPID={os.getpid()}", *([f"STATUS={status}"] if status else []))

    def stopping(self, status: str = "") -> bool:
        return self.send("STOPPING=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={text}")

    def watchdog(self, force: bool = False) -> bool:
        """Ping when due (at most every quarter of the watchdog interval), or always with ``force``."""
        if self.watchdog_interval is None:
            return False
        now = time.monotonic()
        if not force and now - self._last_ping < self.watchdog_interval / 2:
            return False
        self._last_ping = now
        return self.send("WATCHDOG=1")


def _watchdog_interval(env: dict[str, str]) -> float | None:
    """Half of ``WATCHDOG_USEC`` in seconds, if the watchdog is meant for this process."""
    usec = env.get("WATCHDOG_USEC", "")
    pid = env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) <= 0:
        return None
    if pid and pid.isdigit() and int(pid) != os.getpid():
        return None
    return int(usec) / 1e6 / 2
