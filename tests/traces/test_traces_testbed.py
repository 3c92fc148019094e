from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rltune_daemon.domain.workload import Workload
from rltune_daemon.traces import clusterfile, load_workload, split_by_time


def test_cluster_is_the_local_slurm_testbed(testbed: Workload, fixtures: Path) -> None:
    spec = testbed.cluster
    assert [(n.name, n.gpu_type, n.gpus, n.cpus, n.mem_mb) for n in spec.nodes] == [
        ("p100-1", "p100", 4, 8, 64000),
        ("p100-2", "p100", 4, 8, 64000),
        ("k80-1", "k80", 2, 8, 32000),
        ("k80-2", "k80", 2, 8, 32000),
        ("m40-1", "m40", 1, 4, 16000),
    ]
    assert spec.partition_names == ("gpu",) and spec.total_gpus == 13
    # the same shape as the captured 'scontrol -o show node' of the real test cluster
    real = clusterfile.load(fixtures / "scontrol_testbed_nodes.txt")
    assert sorted((n.name, n.gpu_type, n.gpus, n.cpus, n.mem_mb) for n in real.nodes) == sorted(
        (n.name, n.gpu_type, n.gpus, n.cpus, n.mem_mb) for n in spec.nodes
    )


def test_jobs(testbed: Workload) -> None:
    jobs = testbed.jobs
    assert len(jobs) == 1024
    runtime = np.array([j.runtime for j in jobs])
    assert runtime.min() >= 120 and runtime.max() <= 70 * 60
    eight = [j for j in jobs if j.gpus == 8]
    assert eight and all(j.nodes == 2 and j.gpu_types == ("p100",) for j in eight)
    multinode = [j for j in jobs if j.nodes > 1]
    assert {j.gpu_types for j in multinode} == {("p100",), ("k80",)}
    pinned = sum(1 for j in jobs if j.gpu_types) / len(jobs)
    assert 0.1 < pinned < 0.4  # some pinned, most not
    assert Counter(j.gpus for j in jobs).keys() == {1, 2, 4, 8}
    assert {j.account for j in jobs} == {"nlp", "serving", "vision"}
    assert all(j.partition == "gpu" for j in jobs)


def test_offered_load_gives_queueing(testbed: Workload) -> None:
    gpus = np.array([j.gpus for j in testbed.jobs])
    runtime = np.array([j.runtime for j in testbed.jobs])
    load = (gpus * runtime).sum() / (13 * testbed.jobs[-1].submit)
    assert load == pytest.approx(0.9, abs=0.1)


def test_evaluation_size_holds_windows() -> None:
    """Evaluation loads ``jobs=20480`` so that the held-out 10 % holds 1024-job windows (paper §5.6
    size); same mix and load, ids stay unique and sort in submit order."""
    w = load_workload("testbed", jobs=20480)
    assert len(w.jobs) == 20480 and len({j.id for j in w.jobs}) == 20480
    ids = [j.id for j in w.jobs]
    assert ids[0] == "tb-00001" and ids == sorted(ids)  # fixed width: string order = submit order
    _, held_out = split_by_time(w)
    assert len(held_out.jobs) == 2048
    gpus = np.array([j.gpus for j in w.jobs])
    runtime = np.array([j.runtime for j in w.jobs])
    assert (gpus * runtime).sum() / (13 * w.jobs[-1].submit) == pytest.approx(0.9, abs=0.03)
    assert load_workload("testbed").jobs[0].id == "tb-0001"
