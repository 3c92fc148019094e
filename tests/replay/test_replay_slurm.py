"""A short replay on the real local Slurm: tens of jobs at a large speedup, two arms, each on its own
fresh private cluster. Checks what a replay promises (every job accounted for, Slurm's times in
order, nothing of ours left, the same seed submitting the same sequence, results.json complete), not
how close the simulator comes: at S = 600 Slurm's 1-s clock is 10 trace minutes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rltune_daemon.policies.slurm_priority import cluster_weights
from rltune_daemon.replay.cluster import start_local
from rltune_daemon.replay.run import ReplayConfig, run_replay
from rltune_daemon.slurm.localcluster import slurm_installed

pytestmark = pytest.mark.slurm


@pytest.fixture(autouse=True)
def _root_and_slurm() -> None:
    if os.geteuid() != 0:
        pytest.skip("a replay on the local cluster needs root (it starts slurmctld/slurmd)")
    if not slurm_installed():
        pytest.fail("Slurm packages are missing: run `make setup`")


@pytest.fixture
def state_root() -> Iterator[Path]:
    """A short private directory for the replay's clusters (munge's socket path must stay short), so
    that a test sees only its own clusters when others run in parallel."""
    root = Path(tempfile.mkdtemp(prefix="rrt-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _clusters(root: Path) -> list[str]:
    return [p.name for p in root.glob("rlt-replay-*")]


def test_scaled_parameters_reach_slurm(state_root: Path) -> None:
    target = start_local(600.0, accounting=False, root=state_root)
    try:
        text = target.config_text()
        assert "bf_interval=1" in text and "bf_window=17" in text  # 7 days / 600 = 16.8 min -> 17
        assert "PriorityMaxAge          = 00:17:00" in text
        weights, _ = cluster_weights(text, 600.0)
        assert weights.job_size == 1000 and weights.partition == 1000
        assert weights.age == 0.0  # no slurmdbd: Slurm ignores the age factor, and so does the simulator
    finally:
        target.stop()
    assert _clusters(state_root) == []  # the private cluster's state is gone


def test_short_replay_two_arms(tmp_path: Path, state_root: Path) -> None:
    cfg = ReplayConfig(arms=("multifactor", "daemon:sjf"), seeds=(0,), window_size=24, speedup=600.0,
                       accounting=False, opts={"jobs": "2000"}, poll=0.25, out=str(tmp_path),
                       state_root=str(state_root))
    data = run_replay(cfg, progress_bar=False)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert set(saved) >= {"policies", "simulated", "fidelity", "placement", "config", "runs", "per_job"}
    for arm in cfg.arms:
        for key in ("bsld", "wait_mean", "jct_mean", "utilization", "makespan"):
            assert saved["policies"][arm][key] is not None
        for key in ("wait_mean_real", "wait_mean_sim", "wait_rel_error", "bsld_real", "bsld_sim",
                    "start_spearman"):
            assert saved["fidelity"][arm][key] is not None
        rows = saved["per_job"][arm]["0"]
        assert len(rows) == cfg.window_size
        assert len({r["job_id"] for r in rows}) == cfg.window_size  # every job has its own Slurm id
        for r in rows:
            assert r["submit"] is not None and r["start"] is not None and r["end"] is not None, r
            assert r["start"] >= r["submit"] and r["end"] >= r["start"], r
    runs = {r["arm"]: r for r in data["runs"]}
    for r in runs.values():
        assert r["submitted"] == r["finished"] == cfg.window_size
        assert r["left_in_queue"] == 0
    assert runs["multifactor"]["submission_sequence"] == runs["daemon:sjf"]["submission_sequence"]
    assert runs["daemon:sjf"]["daemon_rc"] == 0  # SIGTERM -> restore -> clean exit
    assert {p.name for p in tmp_path.iterdir()} >= {"results.json", "results.md", "wait_cdf.png",
                                                     "busy_gpus.png"}
    assert _clusters(state_root) == []


def test_ctrl_c_cleans_up_jobs_daemon_and_cluster(tmp_path: Path, state_root: Path) -> None:
    """SIGINT in the middle of a daemon arm: exit 130, the daemon stopped through its restore path, and
    the private cluster (with every job of the replay) stopped and deleted."""
    out = tmp_path / "out"
    # SIGINT handled in the child even when this test runs from a shell that ignores it for background
    # jobs (Python then would not turn it into KeyboardInterrupt; a terminal's Ctrl-C always does)
    boot = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from rltune_daemon.cli.main import main; sys.exit(main(sys.argv[1:]))")
    argv = [sys.executable, "-c", boot, "replay", "--window-size", "40",
            "--speedup", "60", "--arms", "daemon:sjf", "--no-accounting", "--opt", "jobs=2000",
            "--out", str(out), "--state-root", str(state_root)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log = out / "daemon" / "seed0-daemon_sjf.log"
    deadline = time.monotonic() + 240
    # state-based: interrupt once the daemon has cycled and the replay has a cluster of its own
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and '"cycle"' in log.read_text(errors="replace") and _clusters(state_root):
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()[0]
    time.sleep(3.0)  # some jobs submitted and running
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=240)[0].decode(errors="replace")
    assert proc.returncode == 130, output
    assert _clusters(state_root) == [], output
    assert '"event": "stopped"' in log.read_text(errors="replace")  # the daemon's SIGTERM path ran
    ps = subprocess.run(["pgrep", "-af", "rltune_daemon.replay.daemon_arm"], capture_output=True, text=True,
                        check=False)
    assert str(out) not in ps.stdout


def test_existing_cluster_is_left_running_and_nobody_elses_job_is_touched(tmp_path: Path,
                                                                          state_root: Path) -> None:
    """``--cluster existing``: the admin's cluster (here a private local one the test starts) is used
    as it is and never stopped; another user's queued job is neither cancelled nor steered (the daemon
    arm's scope, tested in test_replay_scaling, keeps it to the replay user's jobs in the partition)."""
    from rltune_daemon.slurm.localcluster import LocalCluster

    state_root.chmod(0o755)  # munged (the munge user) must traverse every parent of its socket
    cluster = LocalCluster.private(state_root / "existing", message_timeout=5, timeout=180)
    cluster.start()
    env = cluster.env()
    try:
        other = subprocess.run(
            ["runuser", "-u", "rltuser", "--", "sbatch", "--parsable", "-p", "gpu", "--gres=gpu:1",
             "--begin=now+1hour", "-t", "5", "-o", "/dev/null", "--wrap", "sleep 60"],
            env=env, capture_output=True, text=True, check=True, cwd="/tmp").stdout.strip()
        cfg = ReplayConfig(arms=("daemon:sjf",), seeds=(0,), window_size=12, speedup=600.0,
                           cluster="existing", partition="gpu", slurm_conf=str(cluster.conf),
                           accounting=False, opts={"jobs": "2000"}, poll=0.25, out=str(tmp_path),
                           state_root=str(state_root))
        data = run_replay(cfg, progress_bar=False)
        run = data["runs"][0]
        assert run["submitted"] == run["finished"] == cfg.window_size and run["left_in_queue"] == 0
        assert run["daemon_rc"] == 0
        assert cluster.is_running()  # an existing cluster is never stopped
        row = subprocess.run(["squeue", "-h", "-j", other, "-O", "JobID,State"], env=env,
                             capture_output=True, text=True, check=True).stdout.split()
        assert row == [other, "PENDING"]  # still queued: the replay cancels only ids it submitted
    finally:
        cluster.stop(purge=True)
