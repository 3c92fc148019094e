"""Feature values on a hand-built snapshot: every expected number below is worked out by hand from the
cluster drawn here, not by calling the code under test.

    node  type  GPUs  CPUs  mem(MB)   running                                  free GPU/CPU/mem
    n0    v100  4     16    64000     2 GPU, 8 CPU, 32000 MB, ends now+1800   2 / 8 / 32000
    n1    v100  4     16    64000     3 GPU, 12 CPU, 48000 MB, ends now+7200  1 / 4 / 16000
    n2    k80   2     8     32000     -                                        2 / 8 / 32000 (idle)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from feature_helpers import NOW, view_of

from rltune_daemon import features
from rltune_daemon.domain.cluster import NodeSpec
from rltune_daemon.domain.jobs import Job
from rltune_daemon.features.schema import INDEX

NODES = [NodeSpec("n0", "v100", 4, 16, 64000), NodeSpec("n1", "v100", 4, 16, 64000),
         NodeSpec("n2", "k80", 2, 8, 32000)]
RUNNING = [("n0", 2, 8, 32000, NOW + 1800), ("n1", 3, 12, 48000, NOW + 7200)]
JOBS = [
    Job("A", NOW - 1800, 1, 3600.0, user="u1"),  # any type
    Job("B", NOW - 7200, 2, 7200.0, gpu_types=("v100",), user="u1"),
    Job("C", NOW - 100, 4, 36000.0, gpu_types=("v100",), user="u2"),
    Job("D", NOW - 50, 6, 3600.0, gpu_types=("v100",), user="u2"),  # 2 nodes x 3 GPUs
    Job("E", NOW - 10, 2, 600.0, gpu_types=("k80",), cpus=2, mem_mb=1000, user="u2"),
    Job("F", NOW - 5, 2, 600.0, nodes=2, user="u2"),  # 2 nodes x 1 GPU, any type
]


@pytest.fixture(scope="module")
def nat() -> np.ndarray:
    return features.natural_features(view_of(NODES, RUNNING, JOBS))


@pytest.fixture(scope="module")
def fs() -> features.FeatureSet:
    return features.build(view_of(NODES, RUNNING, JOBS))


def col(a: np.ndarray, name: str) -> list[float]:
    return [float(v) for v in a[:, INDEX[name]]]


def test_cff(nat: np.ndarray) -> None:
    any_type = 1 - (2 * 2 / 4 + 1 * 1 / 4 + 2 * 2 / 2) / 5  # 0.35
    v100 = 1 - (2 * 2 / 4 + 1 * 1 / 4) / 3
    k80 = 1 - (2 * 2 / 2) / 2  # 0: its only free GPUs are a whole node
    assert col(nat, "cff") == pytest.approx([any_type, v100, v100, v100, k80, any_type])


def test_demand_supply_ratio(nat: np.ndarray, fs: features.FeatureSet) -> None:
    assert col(nat, "demand_supply_ratio") == pytest.approx([1 / 5, 2 / 3, 4 / 3, 6 / 3, 2 / 2, 2 / 5])
    assert col(fs.raw, "demand_supply_ratio") == pytest.approx(
        [math.log2(1 + r) for r in (1 / 5, 2 / 3, 4 / 3, 2.0, 1.0, 2 / 5)], rel=1e-6)


def test_future_availability(nat: np.ndarray) -> None:
    # n0's job ends within the 1 h horizon (2 GPUs come back); n1's does not
    assert col(nat, "future_availability") == pytest.approx(
        [(5 + 2 - 1) / 10, (3 + 2 - 2) / 8, (3 + 2 - 4) / 8, (3 + 2 - 6) / 8, (2 + 0 - 2) / 2,
         (5 + 2 - 2) / 10])


def test_can_schedule_now_and_ways(nat: np.ndarray) -> None:
    # A: 1 GPU (+4 CPU, 16000 MB per node by GPU share) fits n0, n1 (exactly), n2
    # B: 2 v100 GPUs fit n0 only; C: 4 v100 nowhere; D: needs 2 nodes with 3 free v100: none
    # E: 2 k80 GPUs on n2; F: 2 nodes x 1 GPU out of 3 fitting nodes: 3 - 2 + 1 = 2 ways
    assert col(nat, "can_schedule_now") == [1, 1, 0, 0, 1, 1]
    assert col(nat, "num_ways_to_schedule") == [3, 1, 0, 0, 1, 2]


def test_cluster_and_visible_features(nat: np.ndarray) -> None:
    assert col(nat, "free_nodes") == pytest.approx([1 / 3, 0, 0, 0, 1, 1 / 3])
    assert col(nat, "gpu_type_share") == pytest.approx([1, 0.8, 0.8, 0.8, 0.2, 1])
    assert col(nat, "queue_order") == pytest.approx([1 / 5, 0, 2 / 5, 3 / 5, 4 / 5, 1])
    assert col(nat, "user_share") == pytest.approx([3 / 17, 3 / 17] + [14 / 17] * 4)
    assert col(nat, "req_cpus") == pytest.approx([4, 8, 16, 24, 2, 8])  # 4 CPUs per GPU everywhere
    assert col(nat, "req_mem") == pytest.approx([16000, 32000, 64000, 96000, 1000, 32000])
    assert col(nat, "wait") == pytest.approx([1800, 7200, 100, 50, 10, 5])
    assert col(nat, "job_size") == pytest.approx([3600, 14400, 144000, 21600, 1200, 1200])


def test_urgency(nat: np.ndarray) -> None:
    a = 0.5 * math.log1p(1800 / 3600) + 0.5 * math.log1p(1800 / 86400)
    e = 0.5 * math.log1p(10 / 600) + 0.5 * math.log1p(10 / 86400)  # 600 s is the requested-time floor
    assert col(nat, "urgency")[0] == pytest.approx(a)
    assert col(nat, "urgency")[4] == pytest.approx(e)


def test_normalised_examples(fs: features.FeatureSet) -> None:
    assert col(fs.raw, "req_gpus")[0] == pytest.approx(math.log1p(1) / math.log1p(64), rel=1e-6)
    assert col(fs.raw, "req_time")[0] == pytest.approx(math.log1p(60) / math.log1p(604800 / 60), rel=1e-6)
    assert col(fs.raw, "future_availability") == pytest.approx([0.6, 0.375, 0.125, -0.125, 0, 0.5], rel=1e-6)
    assert fs.raw.dtype == np.float32 and fs.raw.shape == (6, 18)
    assert fs.actor.shape == (6, features.ACTOR_DIM) and fs.critic.shape == (6, features.CRITIC_DIM)


def test_actor_slots_follow_fragmentation(fs: features.FeatureSet) -> None:
    raw, actor = fs.raw, fs.actor
    lead, second, flex = 0, 1, 5
    for i in range(len(raw)):
        frag = raw[i, INDEX["cff"]] >= 0.5  # B, C, D (v100: CFF 0.58): job size leads
        big, small = ("job_size", "urgency") if frag else ("urgency", "job_size")
        assert actor[i, lead] == raw[i, INDEX[big]]
        assert actor[i, second] == pytest.approx(0.5 * raw[i, INDEX[small]])
    assert [bool(raw[i, INDEX["cff"]] >= 0.5) for i in range(6)] == [False, True, True, True, False, False]
    # flexibility: can_schedule_now, plus num_ways where a job has >= 2 ways (A: 3, F: 2)
    ways = raw[:, INDEX["num_ways_to_schedule"]]
    assert actor[:, flex].tolist() == pytest.approx([1 + ways[0], 1, 0, 0, 1, 1 + ways[5]])
    assert fs.critic[:, 3].tolist() == [1, 1, 0, 0, 1, 1]  # critic slot can_schedule_now


def test_runtime_is_never_read() -> None:
    """Features see requested time only: changing true runtimes changes nothing."""
    jobs_a = [dataclasses.replace(j, runtime=10.0) for j in JOBS]
    jobs_b = [dataclasses.replace(j, runtime=99999.0) for j in JOBS]
    a = features.raw_features(view_of(NODES, RUNNING, jobs_a))
    b = features.raw_features(view_of(NODES, RUNNING, jobs_b))
    assert np.array_equal(a, b)
