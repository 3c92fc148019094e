"""SiteFactor targets: strictly decreasing in plan order, built from the planned jobs' own base
priorities, never below 1."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rltune_daemon.planner.plan import PlannerMemory
from rltune_daemon.planner.priorities import (
    ROOM,
    SITE_FACTOR_LIMIT,
    realizes,
    retarget,
    site_factors,
    target_priorities,
)


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


@given(st.lists(st.integers(-10**6, 10**9), min_size=1, max_size=200),
       st.lists(st.integers(0, 10**9), min_size=1, max_size=200))
def test_retarget_is_strict_positive_and_keeps_an_order_already_there(current: list[int],
                                                                      base: list[int]) -> None:
    n = min(len(current), len(base))
    cur, b = np.array(current[:n], dtype=np.int64), np.array(base[:n], dtype=np.int64)
    t = retarget(cur, b)
    assert realizes(t)
    assert t.min() >= 1
    ordered = target_priorities(b)
    assert retarget(ordered, b).tolist() == ordered.tolist()  # nothing to move: nothing written


def test_a_few_inverted_neighbours_move_and_the_rest_stays() -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(1000, 1100, size=1000)
    written = retarget(base, base)  # an unsteered tier: its own landscape, ROOM apart where bases tied
    assert written.tolist() == target_priorities(base, ROOM).tolist()
    drifted = written.copy()
    drifted[[10, 400, 401, 900]] += ROOM + 1  # Slurm recomputed these (fresh age), the others not yet
    assert not realizes(drifted)
    t = retarget(drifted, base)
    assert realizes(t)
    moved = np.flatnonzero(t != drifted)
    assert 1 <= len(moved) <= 8, moved  # the whole tier was rewritten before: ~1000 writes a cycle


def test_a_job_moved_up_the_plan_lands_mid_gap() -> None:
    cur = np.array([900, 500, 800, 100], dtype=np.int64)  # the plan now puts the 800 job third
    t = retarget(cur, cur - 50)  # every job carries a SiteFactor of 50
    assert t.tolist()[0] == 900 and t.tolist()[2:] == [800, 100]
    assert t[1] == 850  # midway between its new neighbours, not 1 below the one above


def test_writes_settle_under_a_cap_while_ages_drift_and_the_plan_moves() -> None:
    """What the daemon meets on a busy Slurm: at most ``cap`` writes a cycle, a plan that moves a few
    jobs every cycle, every job's age factor growing, recomputed for a job the moment its SiteFactor is
    written and for all jobs only every few cycles. With targets 1 apart and no memory of the drift
    (the planner until 2026-11-26) this wrote the cap every cycle, forever (docs/benchmarks.md)."""
    rng = np.random.default_rng(0)
    n, cap, moves, per_cycle = 2000, 200, 20, 7
    base_fresh = (rng.integers(0, 4, size=n) * 100 + 5000).astype(np.int64)  # 4 sizes: ties everywhere
    base_seen = base_fresh.copy()  # Slurm's stored value: recalculated every 3 cycles or on a write
    site = np.zeros(n, dtype=np.int64)
    order = [int(x) for x in rng.permutation(n)]
    memory, ids, writes = PlannerMemory(), [str(i) for i in range(n)], []
    for cycle in range(40):
        base_fresh += per_cycle
        if cycle % 3 == 0:
            base_seen = base_fresh.copy()
        for _ in range(moves):
            order.insert(int(rng.integers(n)), order.pop(int(rng.integers(n))))
        rows = np.array(order)
        gap = memory.priority_gap(ids, base_seen)
        cur = (base_seen + site)[rows]
        t = cur if realizes(cur) else retarget(cur, base_seen[rows], gap)
        want = t - base_seen[rows]
        changed = np.flatnonzero(want != site[rows])[:cap]
        site[rows[changed]] = want[changed]
        base_seen[rows[changed]] = base_fresh[rows[changed]]  # a write recomputes that job now
        writes.append(len(changed))
    assert memory.gap > per_cycle  # it learned how far priorities move between recalculations
    assert max(writes[-15:]) < cap and sum(writes[-15:]) / 15 < 0.6 * cap, writes
