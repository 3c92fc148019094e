"""Alibaba PAI 2020: real machine pool (sliced) + generator fitted to the published figures."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError
from rltune_daemon.traces import alibaba as gen
from rltune_daemon.traces import load_workload


def test_cluster_slice(alibaba: Workload) -> None:
    spec = alibaba.cluster
    by_type = Counter(n.gpu_type for n in spec.nodes)
    # GPU machines: P100 798, T4 497, MISC 280, V100M32 135, V100 59 + 45; / 80, rounded
    assert gen.DEFAULT_SLICE == 1 / 80
    assert by_type == {"p100": 10, "t4": 6, "misc": 4, "v100m32": 2, "v100": 1}
    assert len(spec.nodes) == 23 and spec.total_gpus == 88
    twentieth = Counter(n.gpu_type for n in gen.cluster(fraction=1 / 20).nodes)
    assert twentieth == {"p100": 40, "t4": 25, "misc": 14, "v100m32": 7, "v100": 5}
    assert {(n.gpu_type, n.gpus) for n in spec.nodes} == {
        ("p100", 2),
        ("t4", 2),
        ("misc", 8),
        ("v100m32", 8),
        ("v100", 8),
    }
    assert "" not in spec.gpu_types  # CPU machines dropped
    tiny = gen.cluster(fraction=1 / 1000)
    assert Counter(n.gpu_type for n in tiny.nodes) == {t: 1 for t in by_type}


def test_runtime_model(alibaba: Workload) -> None:
    sigma = gen.lognormal_sigma(gen.MEDIAN_RUN, gen.TABLE2_MEAN_RUN, gen.MAX_RUN)
    # analytic truncated-lognormal mean hits Table 2 exactly; the sample mean is heavy-tailed
    runtime = np.array([j.runtime for j in alibaba.jobs])
    assert 1.9 < sigma < 2.3
    assert np.median(runtime) == pytest.approx(gen.MEDIAN_RUN, rel=0.05)
    assert runtime.mean() == pytest.approx(gen.TABLE2_MEAN_RUN, rel=0.20)
    assert runtime.max() <= 30 * 86400 and runtime.min() >= 1


def test_sizes_and_constraints(alibaba: Workload) -> None:
    n = len(alibaba.jobs)
    gpus = Counter(j.gpus for j in alibaba.jobs)
    for value, p in zip(gen.GPU_VALUES, gen.GPU_PROBS, strict=True):
        assert 100 * gpus[value] / n == pytest.approx(100 * p, abs=1.0)
    types = Counter(j.gpu_types for j in alibaba.jobs)
    for t, p in gen.CONSTRAINTS:
        assert 100 * types[t] / n == pytest.approx(100 * p, abs=1.5)
    assert alibaba.meta["dropped"] == {}
    # at 1/80 the pinned pools are small (v100|v100m32: 24 GPUs, v100m32: 16, t4: 12): big pinned
    # jobs are capped to their pool, counted, and every job fits its pool
    nodes = alibaba.cluster.nodes
    pool = {t: sum(nd.gpus for nd in nodes if not t or nd.gpu_type in t) for t, _ in gen.CONSTRAINTS}
    assert pool == {(): 88, ("v100", "v100m32"): 24, ("v100m32",): 16, ("t4",): 12}
    assert all(j.gpus <= pool[j.gpu_types] for j in alibaba.jobs)
    odd = sum(1 for j in alibaba.jobs if j.gpus not in gen.GPU_VALUES)  # 24 or 12: capped for sure
    assert alibaba.meta["gpus_capped_to_pool"] >= odd > 0


def test_arrival_rate(alibaba: Workload) -> None:
    assert alibaba.meta["offered_load"] == pytest.approx(0.75, abs=0.05)
    t2 = load_workload("alibaba", jobs=4000, rate=gen.TABLE2_RATE)
    expected = gen.TABLE2_RATE * t2.cluster.total_gpus / gen.FULL_CLUSTER_GPUS
    assert t2.meta["generator"]["rate_per_s"] == pytest.approx(expected)
    realised = (len(t2.jobs) - 1) / t2.jobs[-1].submit
    assert realised == pytest.approx(expected, rel=0.05)


def test_users(alibaba: Workload) -> None:
    users = Counter(j.user for j in alibaba.jobs)
    assert len(users) == round(gen.TABLE4_USERS / 80) == 16
    top = users.most_common(1)[0][1] / len(alibaba.jobs)
    assert top > 3 / 16  # Zipf (1/H_16 = 0.30): the heaviest user submits far more than 1/16 of the jobs
    assert not math.isnan(top)


def test_machine_file_option(tmp_path: Path) -> None:
    f = tmp_path / "machines.csv"
    f.write_text(
        "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm1,V100,96,512,8\nm2,T4,96,512,2\nm3,CPU,96,512,0\n"
    )
    w = load_workload("alibaba", machines=str(f), slice=1, jobs=500)
    assert sorted(n.gpu_type for n in w.cluster.nodes) == ["t4", "v100"]
    assert all(j.gpus <= 10 for j in w.jobs) and w.meta["gpus_capped_to_pool"] > 0
    f.write_text("machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm1,V100,many,512,8\n")
    with pytest.raises(InputFileError, match=r"machines.csv:2: want machine,gpu_type"):
        load_workload("alibaba", machines=str(f))
