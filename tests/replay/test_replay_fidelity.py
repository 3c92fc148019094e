"""Fidelity maths and the cluster-priority formula the simulator uses for a replay."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rltune_daemon.domain.arrays import ClusterArrays, JobTable
from rltune_daemon.domain.jobs import Job
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.errors import UserError
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.policies.slurm_priority import cluster_weights, slurm_duration
from rltune_daemon.replay import fidelity as fid
from rltune_daemon.stats import ranks, rel_error, spearman
from rltune_daemon.traces import testbed


def test_spearman() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert spearman(a, a * 10 + 3) == pytest.approx(1.0)
    assert spearman(a, -a) == pytest.approx(-1.0)
    assert spearman(a, np.array([1.0, 3.0, 2.0, 4.0, 5.0])) == pytest.approx(0.9)
    # ties share their average rank: [1, 1, 2] ranks as [1.5, 1.5, 3]
    assert ranks(np.array([5.0, 5.0, 7.0])).tolist() == [1.5, 1.5, 3.0]
    # pairs with a NaN on either side are left out
    assert spearman(np.array([1.0, np.nan, 3.0, 4.0]), np.array([2.0, 1.0, np.nan, 9.0])) == 1.0
    assert math.isnan(spearman(np.array([1.0]), np.array([1.0])))


def test_rel_error_and_signs() -> None:
    assert rel_error(110.0, 100.0) == pytest.approx(0.1)
    assert rel_error(90.0, 100.0) == pytest.approx(-0.1)
    real = {"multifactor": {"wait_mean": 100.0, "bsld": 3.0}, "a": {"wait_mean": 80.0, "bsld": 2.0},
            "b": {"wait_mean": 120.0, "bsld": 2.5}}
    sim = {"multifactor": {"wait_mean": 100.0, "bsld": 3.0}, "a": {"wait_mean": 70.0, "bsld": 2.1},
           "b": {"wait_mean": 90.0, "bsld": 2.4}}
    agree = fid.sign_agreement(real, sim)
    assert agree["a"]["sign_agrees"] is True
    assert agree["b"]["wait_mean_sign_agrees"] is False and agree["b"]["bsld_sign_agrees"] is True
    assert agree["b"]["sign_agrees"] is False
    assert agree["a"]["wait_mean_vs_multifactor_real"] == -20.0


def test_summarize_seeds_uses_the_error_of_the_means() -> None:
    rows = [{"wait_mean_real": 100.0, "wait_mean_sim": 110.0, "wait_rel_error": 0.1, "bsld_real": 2.0,
             "bsld_sim": 2.0, "start_spearman": 0.95},
            {"wait_mean_real": 300.0, "wait_mean_sim": 270.0, "wait_rel_error": -0.1, "bsld_real": 4.0,
             "bsld_sim": 4.4, "start_spearman": 0.9}]
    s = fid.summarize_seeds(rows)
    assert s["wait_rel_error"] == pytest.approx((190 - 200) / 200)
    assert s["wait_rel_error_worst_seed"] == pytest.approx(0.1)
    assert s["start_spearman"] == pytest.approx(0.925) and s["start_spearman_min"] == 0.9
    assert s["bsld_rel_error"] == pytest.approx((3.2 - 3.0) / 3.0)


def test_metrics_use_the_trace_run_time() -> None:
    m = fid.metrics(np.array([0.0, 0.0]), np.array([0.0, 100.0]), np.array([100.0, 100.0]),
                    np.array([1.0, 1.0]), 1)
    assert m["wait_mean"] == 50.0 and m["makespan"] == 200.0 and m["utilization"] == 1.0
    assert m["bsld"] == pytest.approx((1.0 + 2.0) / 2)


CONFIG = """Configuration data as of 2026-11-26T10:00:00
AccountingStorageType   = accounting_storage/slurmdbd
PriorityType            = priority/multifactor
PriorityFavorSmall      = No
PriorityMaxAge          = 02:48:00
PriorityWeightAge       = 1000
PriorityWeightFairShare = 0
PriorityWeightJobSize   = 1000
PriorityWeightPartition = 1000
PriorityWeightQOS       = 0
PriorityWeightTRES      = (null)
"""


def test_cluster_weights_from_scontrol_show_config() -> None:
    w, notes = cluster_weights(CONFIG, 60.0)
    assert (w.age, w.fairshare, w.job_size, w.partition, w.qos) == (1000, 0, 1000, 1000, 0)
    assert w.max_age == pytest.approx(168 * 60 * 60.0)  # 2:48 real = 7 days of trace time
    assert w.size_mode == "slurm" and notes == []
    no_dbd, _ = cluster_weights(CONFIG.replace("slurmdbd", "none"), 60.0)
    assert no_dbd.age == 0.0  # Slurm ignores the age factor without accounting
    with pytest.raises(UserError, match="priority/multifactor"):
        cluster_weights(CONFIG.replace("priority/multifactor", "priority/basic"), 60.0)
    small, _ = cluster_weights(CONFIG.replace("FavorSmall      = No", "FavorSmall      = Yes"), 60.0)
    assert small.size_mode == "slurm-small"
    _, qos = cluster_weights(CONFIG.replace("WeightQOS       = 0", "WeightQOS       = 500"), 60.0)
    assert qos and "QOS" in qos[0]
    _, tres = cluster_weights(CONFIG.replace("(null)", "GRES/gpu=1000"), 60.0)
    assert tres and "TRES" in tres[0]


def test_slurm_durations() -> None:
    assert slurm_duration("7-00:00:00") == 7 * 86400
    assert slurm_duration("02:48:00") == 168 * 60
    assert slurm_duration("05:00") == 300
    assert slurm_duration("168") == 168 * 60


def test_slurm_job_size_factor_favours_nodes_and_cpus_like_slurm() -> None:
    cluster = testbed.cluster()  # 5 nodes, 36 CPUs
    jobs = [Job("one", 0.0, 1, 600.0), Job("four", 0.0, 4, 600.0), Job("two-nodes", 0.0, 8, 600.0, nodes=2)]
    w, _ = cluster_weights(CONFIG.replace("slurmdbd", "none"), 60.0)
    table = JobTable.from_jobs(jobs, cluster)
    view = QueueView(table, np.arange(3), 0.0, ClusterArrays.from_spec(cluster))
    prio = Multifactor(w).priority(view)
    # Slurm: 1000 * (nodes / 5 + cpus / 36) / 2 + 1000 (partition); one CPU per node requested
    assert prio.tolist() == [math.floor(1000 * (1 / 5 + 1 / 36) / 2 + 1000)] * 2 + [
        math.floor(1000 * (2 / 5 + 2 / 36) / 2 + 1000)]
    # PriorityFavorSmall=YES: Slurm's (nodes left / nodes + CPUs left / CPUs) / 2, one minus the above
    small, _ = cluster_weights(CONFIG.replace("slurmdbd", "none").replace("FavorSmall      = No",
                                                                          "FavorSmall      = Yes"), 60.0)
    prio = Multifactor(small).priority(view)
    assert prio.tolist() == [math.floor(1000 * (4 / 5 + 35 / 36) / 2 + 1000)] * 2 + [
        math.floor(1000 * (3 / 5 + 34 / 36) / 2 + 1000)]
