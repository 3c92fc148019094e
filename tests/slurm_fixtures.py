"""pytest plugin: a real local Slurm 22.05 cluster for tests marked ``slurm``.

The cluster is the project's own (``rltune_daemon.slurm.localcluster``): a private state dir under
/tmp, free ports picked at random, its own munged, ``MessageTimeout=3`` so that a dead controller is
noticed in ~2 s (clients retry MessageTimeout-1 s, FACTS g). It starts once per session (~0.5 s) and
is stopped at the end. Not root -> the tests are skipped; root without Slurm -> they FAIL and say
to run ``make setup``.

Under pytest-xdist each worker that runs a ``slurm`` test starts its OWN cluster (own state dir,
ports and munged), so tests that stop or freeze slurmctld never disturb another worker. (Sending
them all to one worker with ``xdist_group`` does not work here: xdist 3.8 renames items through
``Item._nodeid``, which pytest 9 no longer reads, so ``--dist loadgroup`` silently acts as ``load``.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rltune_daemon.slurm.localcluster import (
    LocalCluster,
    LocalClusterError,
    slurm_installed,
)
from rltune_daemon.slurm.reader import SlurmReader
from rltune_daemon.slurm.release import parse_version
from rltune_daemon.slurm.runner import SlurmRunner
from rltune_daemon.slurm.writer import SlurmWriter

# The paper's testbed (deploy/local-slurm/slurm.conf.in): node -> (GPU type, GPUs).
GPU_LAYOUT = {"p100-1": ("p100", 4), "p100-2": ("p100", 4), "k80-1": ("k80", 2), "k80-2": ("k80", 2),
              "m40-1": ("m40", 1)}
TEST_USER = "rltuser"
MESSAGE_TIMEOUT = 3
# Longest any test waits for Slurm to reach a state: a job start, a cancel, an epilog take well under a
# second on an idle machine and several seconds when both cores are busy with other work.
WAIT_S = 180.0


class SlurmTestCluster:
    """Handle on the running test cluster with helpers for submitting and waiting."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.env = cluster.env()
        self.conf = str(cluster.conf)
        self.out_dir = str(cluster.state_dir / "out")
        self.blockers: dict[str, str] = {}  # node -> job id, set by fill_gpus

    # -- plumbing --------------------------------------------------------------------------
    def runner(self, **kw: float) -> SlurmRunner:
        return SlurmRunner(slurm_conf=self.conf, max_calls_per_cycle=1000, **kw)

    def reader(self, **kw: bool) -> SlurmReader:
        return SlurmReader(self.runner(), **kw)

    def writer(self, **kw: bool) -> SlurmWriter:
        return SlurmWriter(self.runner(), **kw)

    def run(self, *argv: str, user: str | None = None, stdin: str | None = None,
            check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        cmd = list(argv)
        if user:
            cmd = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={self.conf}", *cmd]
        proc = subprocess.run(cmd, env=self.env, input=stdin, capture_output=True, text=True,
                              timeout=timeout, check=False, cwd="/tmp")
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} rc={proc.returncode}: {proc.stderr.strip()}")
        return proc

    def run_bytes(self, *argv: str) -> bytes:
        """stdout of a client as raw bytes (outputs framed by byte widths), rc 0 required."""
        proc = subprocess.run(list(argv), env=self.env, capture_output=True, timeout=30, check=False,
                              cwd="/tmp")
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace")
            raise AssertionError(f"{' '.join(argv)} rc={proc.returncode}: {err}")
        return proc.stdout

    def submit(self, *args: str, user: str | None = None, wrap: str = "sleep 3000") -> str:
        """``sbatch --parsable`` -> raw job id."""
        out = self.run("sbatch", "--parsable", "-o", "/dev/null", "-D", "/tmp", *args, "--wrap", wrap,
                       user=user).stdout
        return out.strip().split(";")[0]

    def scontrol(self, *args: str) -> str:
        return self.run("scontrol", *args).stdout

    def squeue(self, fmt: str, *job_ids: str, extra: tuple[str, ...] = ()) -> list[str]:
        args = ["squeue", "-h", "-o", fmt, *extra]
        if job_ids:
            args += ["-j", ",".join(job_ids)]
        return [ln for ln in self.run(*args, check=False).stdout.splitlines() if ln]

    def sprio(self) -> dict[str, tuple[int, int]]:
        """raw job id -> (priority, site factor) as sprio prints them."""
        out: dict[str, tuple[int, int]] = {}
        for ln in self.run("sprio", "-h", "-o", "%i|%Y|%S").stdout.splitlines():
            i, p, s = ln.split("|")
            out.setdefault(i, (int(p), int(s)))
        return out

    def state(self, job_id: str) -> str:
        lines = self.squeue("%T", job_id)
        return lines[0].strip() if lines else "GONE"

    # -- waiting ---------------------------------------------------------------------------
    @staticmethod
    def wait_for(pred: Callable[[], bool], timeout: float = WAIT_S, what: str = "condition") -> None:
        """Poll ``pred`` (Slurm's own state) until it holds. ``timeout`` is what the condition needs on an
        idle machine; the wait goes on to at least ``WAIT_S``, so a loaded machine (both cores busy
        with other work) slows a test down but never fails it: only a Slurm that stopped moving does."""
        deadline = time.monotonic() + max(timeout, WAIT_S)
        while time.monotonic() < deadline:
            if pred():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out after {max(timeout, WAIT_S):g} s waiting for {what}")

    def wait_state(self, job_id: str, state: str, timeout: float = WAIT_S) -> None:
        self.wait_for(lambda: self.state(job_id) == state, timeout, f"job {job_id} {state}")

    def wait_in_sprio(self, *job_ids: str, timeout: float = WAIT_S) -> None:
        """Until sprio lists the jobs and Slurm has looked at them once: from 23.11 a cluster without
        accounting gives a new job the reason "InvalidAccount" until its scheduler's next pass, and the
        daemon gives no node hint to a job waiting for anything but resources or priority."""
        self.wait_for(lambda: set(job_ids) <= set(self.sprio()), timeout, f"{job_ids} in sprio")
        self.wait_for(lambda: not any(r.endswith("|InvalidAccount") for r in self.squeue("%A|%r", *job_ids)),
                      timeout, f"{job_ids} evaluated by the scheduler")

    # -- scenarios -------------------------------------------------------------------------
    def fill_gpus(self) -> dict[str, str]:
        """One blocker per node holding all its GPUs (time limit 1 h); waits until all run."""
        ids = {n: self.submit("-J", f"blocker-{n}", "-w", n, f"--gres=gpu:{t}:{g}", "-t", "60")
               for n, (t, g) in GPU_LAYOUT.items()}
        for job_id in ids.values():
            self.wait_state(job_id, "RUNNING")
        self.blockers = ids
        return ids

    def strand_one_p100(self) -> None:
        """Every GPU busy but one on p100-2 and both on k80-2: an any-GPU job placed by Slurm's best fit
        takes the last P100 and strands a P100 job, where the MILP puts it on k80-2 (placement tests)."""
        for node, gres in (("p100-1", "gpu:p100:4"), ("p100-2", "gpu:p100:3"), ("k80-1", "gpu:k80:2"),
                           ("m40-1", "gpu:m40:1")):
            self.wait_state(self.submit("-w", node, f"--gres={gres}", "-t", "60"), "RUNNING")

    def reserve_free_gpus(self, name: str, minutes: int = 60) -> None:
        """The free GPUs of ``strand_one_p100`` reserved for another user: jobs pend there until
        ``name`` is deleted, so the daemon writes before Slurm can start anything."""
        self.run("scontrol", "delete", f"ReservationName={name}", check=False)
        self.scontrol("create", "reservation", f"ReservationName={name}", f"Users={TEST_USER}",
                      "Nodes=p100-2,k80-2", "StartTime=now", f"Duration={minutes}", "Flags=IGNORE_JOBS")

    def mixed_queue(self) -> dict[str, str]:
        """Every kind of job the reader must read, running and pending (every GPU request style, arrays
        with a split task, hostile free text, admin-set priority and nice, node lists, a drained node):
        the scenario of the captured outputs and of the pyslurm comparison. Returns role -> job id."""
        c = self
        meta: dict[str, str] = {}
        # running: p100-1 full, p100-2 half with 4 CPUs/8G oversubscribe, k80 exclusive, user m40, 2-node k80
        meta["run_p100x4"] = c.submit("-J", "run-p100x4", "-w", "p100-1", "--gres=gpu:p100:4", "-t", "30")
        meta["run_p100x2_ovs"] = c.submit("-J", "run-p100x2", "-w", "p100-2", "--gres=gpu:p100:2", "-c", "4",
                                          "--mem=8G", "--oversubscribe", "-t", "20")
        meta["run_user_m40"] = c.submit("-J", "run-user", "--gres=gpu:m40:1", "-t", "10", user=TEST_USER)
        meta["run_2node_k80"] = c.submit("-J", "run-2node", "-N", "2", "--gres=gpu:k80:2", "-t", "10")
        for key in ("run_p100x4", "run_p100x2_ovs", "run_user_m40", "run_2node_k80"):
            c.wait_state(meta[key], "RUNNING")
        meta["run_p100x2_gpus"] = c.submit("-J", "run-gpus", "-w", "p100-2", "--gpus=p100:2", "-t", "15")
        c.wait_state(meta["run_p100x2_gpus"], "RUNNING")
        # pending, every request style
        meta["pd_typed"] = c.submit("-J", "pd-typed", "--gres=gpu:p100:4", "-t", "60")
        meta["pd_untyped"] = c.submit("-J", "pd-untyped", "--gres=gpu:2", "-t", "45")
        meta["pd_gpus_per_job"] = c.submit("-J", "pd-gpus", "--gpus=p100:3", "-t", "30")
        meta["pd_gpus_per_node"] = c.submit("-J", "pd-gpn", "-N", "2", "--gpus-per-node=k80:2", "--mem=4G",
                                            "-t", "30")
        meta["pd_gpus_per_task"] = c.submit("-J", "pd-gpt", "-n", "3", "--gpus-per-task=k80:1", "-t", "30")
        meta["pd_notime"] = c.submit("-J", "pd-notime", "--gres=gpu:m40:1")
        meta["pd_held"] = c.submit("-J", "pd-held", "-H", "--gres=gpu:k80:2", "-t", "5")
        meta["pd_array"] = c.submit("-J", "pd-array", "-a", "0-3", "--gres=gpu:p100:1", "-t", "5")
        meta["pd_nice"] = c.submit("-J", "pd-nice", "--nice=50", "--gres=gpu:p100:1", "-t", "5")
        meta["pd_admin"] = c.submit("-J", "pd-admin", "--gres=gpu:p100:2", "-t", "5")
        meta["pd_negnice"] = c.submit("-J", "pd-negnice", "--gres=gpu:p100:2", "-t", "5")
        meta["pd_ovs"] = c.submit("-J", "pd-ovs", "--gres=gpu:p100:1", "-t", "5")
        meta["pd_user"] = c.submit("-J", "pd|user\nnasty ✓", "--gres=gpu:p100:1", "-t", "25", user=TEST_USER)
        meta["pd_nodes"] = c.submit("-J", "pd-nodes", "--gres=gpu:p100:1", "-t", "5", "-w", "p100-2",
                                    "-x", "k80-[1-2]")
        meta["pd_multipart"] = c.submit("-J", "pd-multi", "-p", "gpu,hipri", "--gres=gpu:p100:1", "-t", "5")
        meta["pd_site"] = c.submit("-J", "pd-site", "--gres=gpu:p100:1", "-t", "7")
        # free text a user controls, crafted to look like the rest of a record (no accounting: any account)
        meta["pd_hostile"] = c.submit("-J", "x|1|2\n99|y", "-A", "acct|9|2026-01-01T00:00:00\n1|forged ✓",
                                      "--comment", "c|\n|", "--wckey", "w|k", "--gres=gpu:p100:1", "-t", "9",
                                      user=TEST_USER)
        meta["pd_long_account"] = c.submit("-J", "pd-long", "-A", "a" * 70, "--gres=gpu:p100:1", "-t", "9")
        meta["done"] = c.submit("-J", "done", "-t", "1", wrap="true")
        c.wait_for(lambda: c.state(meta["done"]) == "GONE", 20, "the short job to end")
        c.scontrol("update", f"JobId={meta['pd_admin']}", "Priority=50000")
        c.scontrol("update", f"JobId={meta['pd_negnice']}", "Nice=-200")
        c.scontrol("update", f"JobId={meta['pd_ovs']}", "OverSubscribe=yes")
        c.scontrol("update", f"JobId={meta['pd_site']}", "SiteFactor=500")
        c.scontrol("update", f"JobId={meta['pd_array']}_1", "SiteFactor=5")  # splits task 1 off
        tasks = c.squeue("%A|%i", extra=("-r",))
        split = [ln.split("|")[0] for ln in tasks if ln.endswith(f"{meta['pd_array']}_1")]
        meta["pd_array_split"] = split[0]
        c.scontrol("update", "NodeName=m40-1", "State=DRAIN", "Reason=maintenance | by admin")
        time.sleep(3)  # a backfill pass (bf_interval=2) sets reasons and expected start times
        c.wait_in_sprio(meta["pd_typed"], meta["pd_array_split"])
        return meta

    def cancel(self, *job_ids: str) -> None:
        if job_ids:
            self.run("scancel", *job_ids, check=False)

    def cancel_pending(self) -> None:
        self.run("scancel", "-t", "PD", "-u", "root", check=False)
        self.run("scancel", "-t", "PD", "-u", TEST_USER, check=False)
        self.wait_for(lambda: not self.squeue("%A", extra=("-t", "PD")), 15, "no pending jobs")

    def cancel_all(self) -> None:
        ids = sorted({ln.strip() for ln in self.squeue("%A")})
        self.cancel(*ids)
        self.wait_for(lambda: not self.squeue("%A", extra=("-t", "PD,R,CG")), 20, "an empty queue")


def slurmctld_release() -> tuple[int, int, int] | None:
    """The release of the slurmctld first on PATH (``make test-versions`` puts each built one there)."""
    exe = shutil.which("slurmctld")
    out = subprocess.run([exe, "-V"], capture_output=True, text=True, check=False).stdout if exe else ""
    return parse_version(out)


def require_release(release: tuple[int, int]) -> None:
    """Skip unless root and Slurm ``release`` or later is on PATH (a feature Debian's 22.05 lacks)."""
    version = slurmctld_release()
    if os.geteuid() != 0 or version is None or version[:2] < release:
        pytest.skip(f"needs root and Slurm {release[0]}.{release[1]:02d}+ on PATH (make test-versions)")


def _started(with_dbd: bool) -> Iterator[SlurmTestCluster]:
    if os.geteuid() != 0:
        pytest.skip("real-Slurm tests need root (they start slurmctld/slurmd); run them as root")
    if not slurm_installed():
        pytest.fail("Slurm packages are missing: run `make setup` "
                    "(it installs slurmctld slurmd slurm-client munge)")
    dbd_programs = ("slurmdbd", "mariadbd")
    if with_dbd and not all(shutil.which(p) or Path("/usr/sbin", p).exists() for p in dbd_programs):
        pytest.fail("slurmdbd/MariaDB are missing: run `make test` (it installs slurmdbd mariadb-server)")
    state = Path(tempfile.mkdtemp(prefix="rlt-slurmdbd-" if with_dbd else "rlt-slurm-", dir="/tmp"))
    cluster = LocalCluster.private(state, with_dbd=with_dbd, message_timeout=MESSAGE_TIMEOUT,
                                   test_user=TEST_USER, timeout=120)
    try:
        cluster.start()
    except LocalClusterError as exc:
        cluster.stop(purge=True)
        pytest.fail(f"local Slurm did not start: {exc}")
    try:
        yield SlurmTestCluster(cluster)
    finally:
        cluster.stop(purge=True)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmTestCluster]:
    """Start the local Slurm cluster once per session (see module docstring)."""
    yield from _started(with_dbd=False)


@pytest.fixture(scope="session")
def slurmdbd_cluster() -> Iterator[SlurmTestCluster]:
    """A second cluster with slurmdbd and a private MariaDB (accounting: sacct works), ~8 s to start;
    started only by the tests that need accounting."""
    yield from _started(with_dbd=True)


@pytest.fixture(scope="module")
def busy(slurm_cluster: SlurmTestCluster) -> Iterator[SlurmTestCluster]:
    """Every GPU held by a blocker job, so that new GPU jobs pend (per test module)."""
    slurm_cluster.cancel_all()
    slurm_cluster.fill_gpus()
    yield slurm_cluster
    slurm_cluster.cancel_all()


@pytest.fixture
def c(busy: SlurmTestCluster) -> Iterator[SlurmTestCluster]:
    """The busy cluster; the test's pending jobs are cancelled afterwards (blockers stay)."""
    yield busy
    busy.cancel_pending()
