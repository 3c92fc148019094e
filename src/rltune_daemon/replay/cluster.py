"""Where a replay runs: the project's private local cluster (started with time-scaled parameters for
each arm and stopped afterwards) or an existing cluster and partition an admin names, which a replay
never starts, stops or reconfigures."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.errors import UserError
from rltune_daemon.replay.scaling import conf_overrides
from rltune_daemon.slurm.localcluster import LocalCluster, slurm_installed
from rltune_daemon.slurm.reader import SlurmReader
from rltune_daemon.slurm.runner import SlurmRunner, slurm_env
from rltune_daemon.traces import testbed


@dataclass
class Target:
    """A cluster a replay submits to: Slurm client environment, partition, and the local cluster it
    owns (None for an existing one)."""

    env: dict[str, str]
    conf: str
    partition: str
    local: LocalCluster | None = None
    state_dir: Path | None = None
    notes: list[str] = field(default_factory=list)

    def run(self, *argv: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout,
                              check=False, cwd="/tmp")

    def config_text(self) -> str:
        proc = self.run("scontrol", "show", "config")
        if proc.returncode != 0:
            raise UserError(f"scontrol show config failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def stop(self) -> None:
        """Stop and delete the local cluster (an existing cluster is left as it is)."""
        if self.local is not None:
            try:
                self.local.stop(purge=True)
            finally:
                self.local = None
                if self.state_dir is not None:
                    shutil.rmtree(self.state_dir, ignore_errors=True)


def start_local(speedup: float, accounting: bool, root: Path | None = None) -> Target:
    """A fresh private local cluster (ports nobody else uses, own munged) with the replay's scaled
    parameters: every arm starts from this identical, empty state."""
    if os.geteuid() != 0:
        raise UserError("a replay on the local cluster needs root (it starts slurmctld/slurmd); "
                        "use --cluster existing --partition P on a cluster you may submit to")
    if not slurm_installed():
        raise UserError("Slurm is not installed: run `make setup` (slurmctld slurmd slurm-client munge)")
    dbd = ("slurmdbd", "mariadbd")
    if accounting and not all(shutil.which(p) or Path("/usr/sbin", p).exists() for p in dbd):
        raise UserError("accounting needs slurmdbd and MariaDB (`make test` installs them); "
                        "or --no-accounting")
    base = root or Path("/tmp")
    base.mkdir(parents=True, exist_ok=True)
    state = Path(tempfile.mkdtemp(prefix="rlt-replay-", dir=base))
    # munged runs as the munge user and must traverse every parent of its socket directory
    for p in (state, *state.parents):
        if p == Path("/"):
            break
        try:
            os.chmod(p, os.stat(p).st_mode | 0o755)
        except PermissionError:
            break
    local = LocalCluster.private(state, with_dbd=accounting, message_timeout=5, test_user=None,
                                 timeout=180, conf_overrides=conf_overrides(speedup))
    target = Target(local.env(), str(local.conf), testbed.PARTITION, local, state)
    try:
        local.start()
    except BaseException:
        target.stop()
        raise
    return target


def existing(partition: str, conf: str = "") -> Target:
    """An admin's cluster: nothing is started or changed; jobs go to ``partition``."""
    env = slurm_env(slurm_conf=conf or None)
    target = Target(env, conf, partition)
    proc = target.run("sinfo", "-h", "-p", partition, "-o", "%P")
    if proc.returncode != 0 or not proc.stdout.strip():
        raise UserError(f"partition {partition!r} not found on the cluster "
                        f"({proc.stderr.strip() or 'sinfo lists nothing'})")
    target.notes.append("existing cluster: its own scheduler parameters, not scaled by the replay")
    return target


def existing_trace_cluster(target: Target) -> ClusterSpec:
    """The partition's nodes as a trace cluster, read with the daemon's own Slurm reader."""
    runner = SlurmRunner(slurm_conf=target.conf or None, max_calls_per_cycle=100)
    runner.begin_cycle()
    snap = SlurmReader(runner, partitions=(target.partition,)).read()
    spec = snap.cluster(f"replay-{target.partition}")
    if not spec.nodes:
        raise UserError(f"partition {target.partition!r} has no usable GPU nodes")
    return spec
