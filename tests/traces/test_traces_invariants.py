"""The Workload contract every trace must keep (the simulator relies on each point)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rltune_daemon.domain.workload import Workload
from rltune_daemon.traces import TRACE_NAMES, load_workload
from rltune_daemon.traces.feasibility import check

SMALL: dict[str, dict[str, Any]] = {
    "helios": {"jobs": 3000},
    "alibaba": {"jobs": 3000},
    "testbed": {},
    "philly": {},
    "alibaba-openb": {},
}


def assert_contract(w: Workload, gpu_trace: bool = True) -> None:
    jobs = w.jobs
    assert jobs, "empty workload"
    submits = [j.submit for j in jobs]
    assert submits == sorted(submits)
    assert submits[0] == 0.0
    assert len({j.id for j in jobs}) == len(jobs)
    parts = set(w.cluster.partition_names) | {""}
    for j in jobs:
        assert j.runtime is not None and j.runtime > 0 and math.isfinite(j.runtime), j
        assert j.time_limit >= j.runtime, j
        assert j.partition in parts, j
        if gpu_trace:
            assert j.gpus >= 1, j
    verdict = check(
        w.cluster,
        np.array([j.gpus for j in jobs]),
        np.array([j.nodes for j in jobs]),
        np.array([j.cpus for j in jobs]),
        np.array([j.mem_mb for j in jobs]),
        [j.gpu_types for j in jobs],
        [j.partition for j in jobs],
    )
    assert verdict.ok.all(), "a kept job cannot run on the cluster"
    assert w.meta["estimates"]["model"] == w.estimates


def test_names() -> None:
    assert TRACE_NAMES == ("philly", "helios", "alibaba", "alibaba-openb", "testbed")


@pytest.mark.parametrize("name", TRACE_NAMES)
def test_contract_default_estimates(name: str) -> None:
    w = load_workload(name, **SMALL[name])
    assert w.estimates == "user"  # none of the named traces records requested times
    assert_contract(w)


@pytest.mark.parametrize("name", ["philly", "testbed", "alibaba-openb"])
def test_oracle_limits_equal_runtime(name: str) -> None:
    w = load_workload(name, estimates="oracle", **SMALL[name])
    assert w.estimates == "oracle"
    assert all(j.time_limit == j.runtime for j in w.jobs)
    assert_contract(w)


@pytest.mark.parametrize("name", ["helios", "alibaba", "testbed"])
def test_generators_deterministic(name: str) -> None:
    a = load_workload(name, seed=3, **SMALL[name])
    b = load_workload(name, seed=3, **SMALL[name])
    c = load_workload(name, seed=4, **SMALL[name])
    assert a.jobs == b.jobs
    assert a.jobs != c.jobs
    assert a.meta["seed"] == 3


def test_real_trace_estimates_seeded(philly: Workload) -> None:
    other = load_workload("philly", seed=1)
    same = load_workload("philly", seed=0)
    assert [j.time_limit for j in same.jobs] == [j.time_limit for j in philly.jobs]
    assert [j.time_limit for j in other.jobs] != [j.time_limit for j in philly.jobs]
    assert [j.runtime for j in other.jobs] == [j.runtime for j in philly.jobs]  # only limits are random
