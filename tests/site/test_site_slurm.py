"""``rltune site`` on a real Slurm with accounting and a priority configuration of its own (age and job
size weighted, ``PriorityFavorSmall=YES``, Slurm's default scheduler intervals): a workload runs for real,
in real time, then the command reads the cluster itself and checks the simulator against what Slurm
recorded. The self-check must recover the waits and the start order, and must be visibly worse when the
history is scored with the paper's default formula instead: the site's configuration matters."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from rltune_daemon.replay.scaling import conf_overrides
from rltune_daemon.slurm.localcluster import LocalCluster, LocalClusterError, slurm_installed

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
# The site's own multifactor: nothing like the default formula (which ranks by requested time).
SITE_PRIORITY = {"PriorityWeightAge": "3000", "PriorityMaxAge": "5", "PriorityWeightJobSize": "10000",
                 "PriorityFavorSmall": "YES", "PriorityWeightPartition": "0", "PriorityWeightFairshare": "0",
                 "PriorityWeightTRES": "", "PriorityWeightQOS": "0", "PriorityCalcPeriod": "1"}
# Real time: Slurm's default scheduler intervals (bf_interval 30 s, sched_interval 60 s). Compressed, as
# `rltune replay` runs a trace S times faster: every interval at Slurm's 1-s floor (replay.scaling).
MODES = {"realtime": {"SchedulerParameters": ""},
         "compressed": {"SchedulerParameters": conf_overrides(60.0)["SchedulerParameters"]}}
JOBS = 100
SUBMIT_SPAN_S = 60.0
FINISH_S = 900.0  # the workload needs about 2.5 min of a 13-GPU cluster; generous for a busy machine


def workload(seed: int = 0) -> list[tuple[float, int, int, int, float]]:
    """(submit offset s, nodes, GPUs per node, limit min, sleep s): small jobs ask long limits and large
    ones short limits, so the default formula (short limits first) and the site's (small jobs first)
    order the queue differently."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(JOBS):
        shape = rng.choice(4, p=[0.5, 0.25, 0.15, 0.1])
        nodes, per_node, limit = [(1, 1, 5), (1, 2, 4), (1, 4, 2), (2, 4, 1)][shape]
        out.append((k * SUBMIT_SPAN_S / JOBS, nodes, per_node, limit, float(rng.uniform(3.0, 12.0))))
    return out


def _start(mode: str) -> LocalCluster:
    state = Path(tempfile.mkdtemp(prefix=f"rlt-site-{mode}-", dir="/tmp"))
    cluster = LocalCluster.private(state, with_dbd=True, message_timeout=5, test_user=None, timeout=180,
                                   conf_overrides={**SITE_PRIORITY, **MODES[mode]})
    try:
        cluster.start()
    except LocalClusterError as exc:
        cluster.stop(purge=True)
        pytest.fail(f"local Slurm ({mode}) did not start: {exc}")
    return cluster


def _run_workload(cluster: LocalCluster) -> None:
    """Submit the workload on its own clock and wait until Slurm has run all of it."""
    env = cluster.env()
    t0 = time.monotonic()
    for offset, nodes, per_node, limit, sleep in workload():
        time.sleep(max(0.0, t0 + offset - time.monotonic()))
        subprocess.run(["sbatch", "-p", "gpu", "-N", str(nodes), "--ntasks-per-node=1",
                        f"--gres=gpu:{per_node}", "-t", str(limit), "-o", "/dev/null", "-D", "/tmp",
                        "--wrap", f"sleep {sleep:.1f}"],
                       env=env, check=True, capture_output=True, timeout=60, cwd="/tmp")
    deadline = time.monotonic() + FINISH_S
    while time.monotonic() < deadline:
        q = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True, timeout=60,
                           check=False, cwd="/tmp")
        if q.returncode == 0 and not q.stdout.strip():
            time.sleep(3.0)  # the last records reach slurmdbd
            return
        time.sleep(2.0)
    raise AssertionError(f"the workload did not finish within {FINISH_S:g} s")


@pytest.fixture(scope="module")
def site_clusters() -> Iterator[dict[str, LocalCluster]]:
    """Both clusters, their workloads run side by side (sleep jobs: the wall time of one)."""
    if os.geteuid() != 0:
        pytest.skip("real-Slurm tests need root (they start slurmctld/slurmd); run them as root")
    if not slurm_installed() or not all(shutil.which(p) or Path("/usr/sbin", p).exists()
                                        for p in ("slurmdbd", "mariadbd")):
        pytest.fail("Slurm with slurmdbd/MariaDB is missing: run `make test` (it installs them)")
    clusters: dict[str, LocalCluster] = {}
    try:
        for mode in sorted(MODES):
            clusters[mode] = _start(mode)
        with ThreadPoolExecutor(len(clusters)) as pool:
            for done in [pool.submit(_run_workload, c) for c in clusters.values()]:
                done.result()
        yield clusters
    finally:
        for cluster in clusters.values():
            cluster.stop(purge=True)


def _site(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rltune_daemon.cli.main", "site", *args],
                          env={**os.environ, **cluster.env()}, capture_output=True, text=True, timeout=900,
                          check=False, cwd=ROOT)


def test_site_self_check_recovers_a_compressed_real_slurm_and_its_own_configuration_matters(
        site_clusters: dict[str, LocalCluster], tmp_path: Path) -> None:
    site_cluster = site_clusters["compressed"]
    out, saved = tmp_path / "report", tmp_path / "export"
    proc = _site(site_cluster, "--days", "1", "--minutes", "0", "--out", str(out), "--export", str(saved),
                 "--models", str(ROOT / "models"), "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads((out / "results.json").read_text())
    fid = res["fidelity"]
    assert res["history"]["jobs"] == JOBS
    assert abs(fid["wait_rel_error"]) <= 0.10, fid
    assert fid["start_spearman"] >= 0.9, fid
    paper = fid["default_formula"]
    assert abs(paper["wait_rel_error"]) > abs(fid["wait_rel_error"]) + 0.05 or (
        paper["start_spearman"] < fid["start_spearman"] - 0.02), fid
    print(f"compressed: wait error {fid['wait_rel_error']:+.1%}, Spearman {fid['start_spearman']:.3f}; "
          f"default formula {paper['wait_rel_error']:+.1%}, {paper['start_spearman']:.3f}")
    assert res["verdict"]["choice"] in res["evaluation"]["policies"]
    assert (out / "report.md").exists() and (out / "wait_by_size.png").exists()
    fragment = (out / "rltune-daemon.toml").read_text()
    assert "recommended_by" in fragment and "base_policy" in fragment
    # what was read, saved, gives the same self-check away from the cluster
    again = _site(site_cluster, "--from", str(saved), "--minutes", "0", "--out", str(tmp_path / "again"),
                  "--models", str(tmp_path / "none"), "--jobs", "2")
    assert again.returncode == 0, again.stderr[-2000:]
    fid2 = json.loads((tmp_path / "again" / "results.json").read_text())["fidelity"]
    assert fid2["wait_rel_error"] == fid["wait_rel_error"]
    names = sorted(p.name for p in saved.iterdir())
    assert names == ["config.txt", "nodes.txt", "partitions.txt", "sacct.txt"]


def test_site_self_check_on_a_real_time_history_orders_like_slurm(site_clusters: dict[str, LocalCluster],
                                                                   tmp_path: Path) -> None:
    """Real time, Slurm's default intervals: the start order is recovered and the site's formula orders
    the jobs far better than the default one. The mean wait is reported, not held to 10 %: on jobs of a
    few seconds this Slurm 22.05 leaves freed GPUs idle for seconds between its scheduler runs, which the
    simulator's main-scheduler-at-events model does not reproduce (docs/site.md)."""
    out = tmp_path / "report"
    proc = _site(site_clusters["realtime"], "--days", "1", "--minutes", "0", "--out", str(out),
                 "--models", str(tmp_path / "none"), "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    fid = json.loads((out / "results.json").read_text())["fidelity"]
    assert fid["start_spearman"] >= 0.9, fid
    assert fid["start_spearman"] > fid["default_formula"]["start_spearman"] + 0.05, fid
    print(f"real time: wait error {fid['wait_rel_error']:+.1%}, Spearman {fid['start_spearman']:.3f}; "
          f"default formula {fid['default_formula']['wait_rel_error']:+.1%}, "
          f"{fid['default_formula']['start_spearman']:.3f}")
