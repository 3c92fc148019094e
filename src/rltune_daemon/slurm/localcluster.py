"""Start/stop the project's local Slurm cluster (paper testbed shape) from Python.

The shell scripts and config templates ship as package data in ``rltune_daemon/slurm/local/`` so they
are found from an installed wheel too; ``deploy/local-slurm/`` holds symlinks to them for operators.
All daemons are started by ``up.sh`` and stopped by ``down.sh`` through the PIDs it recorded.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import KW_ONLY, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rltune_daemon.errors import UserError
from rltune_daemon.slurm.runner import SlurmRunner, slurm_env

DEFAULT_STATE_DIR = "/tmp/rltune-slurm"
REQUIRED_PROGRAMS = ("slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "sinfo", "sprio", "munged")
NODES = ("p100-1", "p100-2", "k80-1", "k80-2", "m40-1")


class LocalClusterError(UserError):
    """up.sh/down.sh failed; the message carries the last lines of their output."""


def default_state_dir() -> str:
    return os.environ.get("RLTUNE_SLURM_STATE") or DEFAULT_STATE_DIR


def script_dir() -> Path:
    """Directory holding up.sh, down.sh and the ``*.conf.in`` templates (package data)."""
    return Path(str(resources.files("rltune_daemon.slurm") / "local"))


def slurm_installed() -> bool:
    """True when every program the local cluster and the CLI backend need is on PATH."""
    return all(shutil.which(p) or Path("/usr/sbin", p).exists() for p in REQUIRED_PROGRAMS)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(n: int, lo: int = 20000, hi: int = 60000) -> int:
    """First port of ``n`` consecutive free TCP ports on 127.0.0.1, so that a private cluster (demo,
    tests, benchmarks) never collides with a site's Slurm or with another private cluster."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(lo, hi - n)
        if all(_port_free(base + i) for i in range(n)):
            return base
    raise UserError(f"no block of {n} free TCP ports between {lo} and {hi} on 127.0.0.1: stop other local "
                    "clusters or free some ports")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


@dataclass
class LocalCluster:
    """One local cluster, identified by its state directory. Ports and MessageTimeout are passed to
    up.sh; ``None`` keeps the script defaults (6817, 17001-17005, 10 s)."""

    state_dir: Path = field(default_factory=lambda: Path(default_state_dir()))
    _: KW_ONLY  # the rest by name: ports and switches side by side
    ctld_port: int | None = None
    slurmd_port: int | None = None
    message_timeout: int | None = None
    with_dbd: bool = False
    dbd_port: int | None = None
    mysql_port: int | None = None
    test_user: str | None = "rltuser"
    link_etc: bool = False
    timeout: float = 300.0
    # slurm.conf lines that replace the template's (key -> value), e.g. `rltune replay`'s time-scaled
    # SchedulerParameters and priority settings; empty keeps the template exactly as the tests know it.
    conf_overrides: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.state_dir = Path(self.state_dir)

    @classmethod
    def private(cls, state_dir: Path, *, with_dbd: bool = False, **kwargs: Any) -> LocalCluster:
        """A cluster on ports nothing else uses (demo, tests, captures): one block of consecutive free
        ports split between slurmctld, one slurmd per node and, with accounting, slurmdbd and MariaDB, so two
        of its own daemons can never be handed the same port (separate draws once were)."""
        daemons = 1 + len(NODES)  # slurmctld, then one slurmd per node
        base = free_port_block(daemons + 2 if with_dbd else daemons)
        return cls(Path(state_dir), ctld_port=base, slurmd_port=base + 1, with_dbd=with_dbd,
                   dbd_port=base + daemons if with_dbd else None,
                   mysql_port=base + daemons + 1 if with_dbd else None, **kwargs)

    @property
    def conf(self) -> Path:
        return self.state_dir / "etc" / "slurm.conf"

    def env(self) -> dict[str, str]:
        """Environment for Slurm clients of this cluster (``SLURM_CONF``, standard time format)."""
        return slurm_env(slurm_conf=str(self.conf))

    def runner(self, *, timeout: float = 20.0, ping_timeout: float = 5.0, max_calls: int = 16) -> SlurmRunner:
        """A runner bound to this cluster's slurm.conf."""
        return SlurmRunner(
            slurm_conf=str(self.conf), timeout=timeout, ping_timeout=ping_timeout,
            max_calls_per_cycle=max_calls,
        )

    def _script_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["RLTUNE_SLURM_STATE"] = str(self.state_dir)
        for key, value in (
            ("RLTUNE_SLURM_PORT", self.ctld_port),
            ("RLTUNE_SLURMD_PORT", self.slurmd_port),
            ("RLTUNE_SLURM_MESSAGE_TIMEOUT", self.message_timeout),
            ("RLTUNE_SLURMDBD_PORT", self.dbd_port),
            ("RLTUNE_SLURM_MYSQL_PORT", self.mysql_port),
        ):
            if value is not None:
                env[key] = str(value)
        env["WITH_DBD"] = "1" if self.with_dbd else "0"
        env["TEST_USER"] = self.test_user or ""
        env["LINK_ETC"] = "1" if self.link_etc else "0"
        env["RLTUNE_SLURM_CONF_OVERRIDES"] = "\n".join(f"{k}={v}" for k, v in self.conf_overrides.items())
        return env

    def _script(self, name: str, extra_env: dict[str, str] | None = None) -> str:
        path = script_dir() / name
        env = self._script_env() | (extra_env or {})
        try:
            proc = subprocess.run(  # argv list, never a shell
                ["bash", str(path)], env=env, capture_output=True, text=True, timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise LocalClusterError(f"{name} did not finish within {self.timeout:g} s") from None
        out = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            tail = " | ".join(out.splitlines()[-4:])
            raise LocalClusterError(f"{name} failed (rc={proc.returncode}): {tail}")
        return out

    def start(self) -> str:
        """Run up.sh (root only): returns its log. Raises ``LocalClusterError`` with its last lines."""
        if os.geteuid() != 0:
            raise LocalClusterError("the local Slurm cluster needs root (it starts slurmctld/slurmd)")
        return self._script("up.sh")

    def stop(self, *, purge: bool = False) -> str:
        """Run down.sh: stops only the daemons this cluster recorded (``purge``: delete the state dir)."""
        return self._script("down.sh", {"PURGE": "1" if purge else "0"})

    def _pid(self, name: str) -> int | None:
        try:
            pid = int((self.state_dir / "run" / f"{name}.pid").read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) and name.split("-", maxsplit=1)[0] in _exe(pid) else None

    def is_running(self) -> bool:
        """slurmctld of this state dir is alive (by its recorded PID and executable)."""
        return self._pid("slurmctld") is not None

    # ---- controller control, for failure tests ------------------------------------------------

    def stop_controller(self, timeout: float = 10.0) -> None:
        """SIGTERM slurmctld (it saves state; clients then get "connection refused", FACTS g)."""
        pid = self._pid("slurmctld")
        if pid is None:
            return
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)

    def start_controller(self, timeout: float = 30.0) -> None:
        """Start slurmctld again on the same state (jobs and site factors are recovered, FACTS g)."""
        if self.is_running():
            return
        subprocess.run(["slurmctld", "-f", str(self.conf)], env=self.env(), check=True, timeout=timeout)
        runner = self.runner(ping_timeout=5.0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runner.begin_cycle()
            if runner.ping():
                self._recount_gres(timeout)
                return
            time.sleep(0.1)
        raise LocalClusterError(f"slurmctld did not answer within {timeout:g} s after restart")

    def freeze_controller(self, frozen: bool = True) -> None:
        """SIGSTOP (``frozen``) / SIGCONT slurmctld: a hung controller (FACTS g)."""
        pid = self._pid("slurmctld")
        if pid is not None:
            os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)
            if not frozen:
                self._recount_gres(30.0)

    def _recount_gres(self, timeout: float) -> None:
        """From 23.11 a slurmctld restarted or stopped under running jobs can count this cluster's fake
        GPUs (every one the same /dev/null device) wrong: a later 4-GPU job on a node shows 0 GPUs in use
        and more jobs start there, until it is reconfigured. 22.05 recovers them right; reconfiguring is
        harmless on every release."""
        subprocess.run(["scontrol", "reconfigure"], env=self.env(), check=False, capture_output=True,
                       timeout=timeout)
