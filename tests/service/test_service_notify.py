"""sd_notify by hand: path and abstract sockets, watchdog interval rules, no-ops outside systemd; and the
real daemon process sending READY=1 / WATCHDOG=1 / STOPPING=1 on a socket the test binds."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rltune_daemon.service.notify import Notifier


@pytest.fixture
def dgram(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify.sock")
    sock.bind(path)
    sock.settimeout(5)
    yield sock, path
    sock.close()


def test_messages_on_a_path_socket(dgram: tuple[socket.socket, str]) -> None:
    sock, path = dgram
    n = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())})
    assert n.enabled and n.watchdog_interval == 1.0
    assert n.ready("policy sjf")
    msg = sock.recv(4096).decode()
    assert msg.splitlines()[0] == "READY=1" and f"MAINPID={os.getpid()}" in msg and "STATUS=policy sjf" in msg
    assert n.watchdog(force=True) and sock.recv(4096) == b"WATCHDOG=1"
    assert not n.watchdog()  # rate-limited to a quarter of WatchdogSec
    assert n.stopping() and sock.recv(4096).startswith(b"STOPPING=1")


def test_abstract_socket() -> None:
    name = f"rltune-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(5)
    try:
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert sock.recv(4096).startswith(b"READY=1")
    finally:
        sock.close()


def test_outside_systemd_everything_is_a_noop(tmp_path: Path) -> None:
    n = Notifier({})
    assert not n.enabled and n.watchdog_interval is None
    assert not n.ready() and not n.watchdog(force=True) and not n.stopping()
    assert Notifier({"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}).watchdog_interval is None  # not ours
    assert Notifier({"WATCHDOG_USEC": "x"}).watchdog_interval is None
    bad = Notifier({"NOTIFY_SOCKET": str(tmp_path / "missing.sock")})
    assert not bad.ready() and bad.errors == 1  # never raises


def test_real_daemon_sends_ready_watchdog_and_stopping(dgram: tuple[socket.socket, str]) -> None:
    sock, path = dgram
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
    env |= {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000", "RLTUNE_METRICS__ENABLED": "false",
            "RLTUNE_SIM__SPEEDUP": "30", "RLTUNE_SIM__JOBS": "200", "RLTUNE_INTERVAL": "60",
            "RLTUNE_LOG__LEVEL": "warning"}
    proc = subprocess.Popen([sys.executable, "-m", "rltune_daemon.cli.daemon", "--backend", "sim"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    got: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum(m == "WATCHDOG=1" for m in got) < 3:
            try:
                got.append(sock.recv(4096).decode())
            except TimeoutError:
                break
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        sock.settimeout(1)
        try:
            while True:
                got.append(sock.recv(4096).decode())
        except TimeoutError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    firsts = [m.splitlines()[0] for m in got]
    assert firsts[0] == "READY=1", got[:3]
    assert firsts.count("WATCHDOG=1") >= 3
    assert any(f.startswith("STATUS=cycle ") for f in firsts)
    assert firsts[-1] == "STOPPING=1" or "STOPPING=1" in firsts
