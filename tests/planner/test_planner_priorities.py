"""SiteFactor targets: strictly decreasing in plan order, built from the planned jobs' own base
priorities, never below 1."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rltune_daemon.planner.priorities import SITE_FACTOR_LIMIT, realizes, site_factors, target_priorities


def test_examples_by_hand() -> None:
    assert target_priorities(np.array([1113, 1113, 1113, 1613])).tolist() == [1613, 1113, 1112, 1111]
    assert target_priorities(np.array([1, 1, 1])).tolist() == [3, 2, 1]
    assert target_priorities(np.array([5, 100, 7])).tolist() == [100, 7, 5]
    assert site_factors(np.array([5, 100, 7]), np.array([100, 7, 5])).tolist() == [95, -93, -2]


@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=200))
def test_targets_strict_positive_and_close_to_the_base_multiset(base: list[int]) -> None:
    b = np.array(base, dtype=np.int64)
    t = target_priorities(b)
    assert realizes(t)
    assert t.min() >= 1
    assert np.all(np.abs(site_factors(b, t)) <= SITE_FACTOR_LIMIT)
    if len(set(base)) == len(base) and min(base) >= 1:
        assert sorted(t.tolist()) == sorted(base)  # distinct values: a pure permutation


def test_realizes_accepts_ties_that_slurms_submit_order_breaks_the_planned_way() -> None:
    prio = np.array([30, 20, 20, 10], dtype=np.int64)
    assert not realizes(prio)  # without submit times a tie is ambiguous
    assert realizes(prio, np.array([5.0, 1.0, 2.0, 0.0]))  # the earlier-submitted tied job is first
    assert not realizes(prio, np.array([5.0, 2.0, 1.0, 0.0]))  # Slurm would start them the other way
    assert not realizes(prio, np.array([5.0, 2.0, 2.0, 0.0]))  # same second: left to the job id, nudge
