"""Invariants on random workloads: every job finishes, waits are never negative, no node is ever
over-allocated, backfill never delays a head job past its reservation, runs are deterministic, and
the pass's failure memo changes nothing; with one reservation per pass (EASY) and with more. With more,
the vectorised reservation planner (``sim.reservations.plan_after``) gives exactly what the first,
loop-by-loop version gave, kept here as the reference."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rltune_daemon.domain import ClusterSpec, Job, NodeSpec, PartitionSpec, Workload
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.placement.allocate import FreeView, allocate, take
from rltune_daemon.policies import make_policy
from rltune_daemon.sim import PolicyController, SimConfig, SimResult, Simulator, simulate
from rltune_daemon.sim.controller import Controller
from rltune_daemon.sim.reservations import Reservation

TYPES = ("a100", "v100")


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    n_nodes = draw(st.integers(1, 5))
    two_parts = draw(st.booleans()) and n_nodes >= 2
    nodes = []
    for i in range(n_nodes):
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        part = ("p1" if i % 2 else "p0") if two_parts else "p0"
        nodes.append(NodeSpec(f"n{i}", draw(st.sampled_from(TYPES)), gpus, 4 * gpus, 8000 * gpus, (part,)))
    parts = (PartitionSpec("p0"),)
    if two_parts:
        parts = (PartitionSpec("p0"), PartitionSpec("p1", priority_tier=2))
    cluster = ClusterSpec("h", tuple(nodes), parts)
    max_gpus = sum(n.gpus for n in nodes)
    n_jobs = draw(st.integers(1, 25))
    jobs = []
    t = 0.0
    for k in range(n_jobs):
        t += draw(st.floats(0, 300, allow_nan=False))
        run = draw(st.floats(1, 2000, allow_nan=False))
        limit = run * draw(st.floats(1, 3, allow_nan=False))
        gpus = draw(st.integers(1, max_gpus))
        types = draw(st.sampled_from([(), ("a100",), ("v100",)]))
        part = draw(st.sampled_from(["p0", "p1"])) if two_parts else "p0"
        cpus = draw(st.sampled_from([0, 1, 3]))
        jobs.append(Job(f"j{k}", t, gpus, limit, runtime=run, gpu_types=types, partition=part, cpus=cpus,
                        user=f"u{k % 3}"))
    return Workload("random", cluster, tuple(jobs))


def _check_capacity(w: Workload, res: SimResult) -> None:
    """Sweep start/end events per node; usage never exceeds capacity."""
    events: list[tuple[float, int, int, int, int, int]] = []
    for row, alloc in res.allocations.items():
        for n, g, c, m in zip(alloc.nodes, alloc.gpus, alloc.cpus, alloc.mem, strict=True):
            events.append((float(res.end[row]), 0, int(n), -int(g), -int(c), -int(m)))
            events.append((float(res.start[row]), 1, int(n), int(g), int(c), int(m)))
    used = np.zeros((len(w.cluster.nodes), 3), dtype=np.int64)
    cap = np.array([[n.gpus, n.cpus, n.mem_mb] for n in w.cluster.nodes])
    for _, _, n, g, c, m in sorted(events):  # ends before starts at equal times
        used[n] += (g, c, m)
        assert (used[n] <= cap[n]).all(), f"node {n} over-allocated: {used[n]} > {cap[n]}"
        assert (used[n] >= 0).all()


@given(workloads(), st.sampled_from(["fcfs", "sjf", "wfp3", "unicep", "f1", "multifactor", "qssf"]),
       st.sampled_from([1, 2, 500]))
def test_jobs_finish_waits_nonnegative_no_overallocation(w: Workload, policy: str, reservations: int) -> None:
    res = simulate(w, make_policy(policy), SimConfig(record=True, bf_reservations=reservations))
    ran = ~np.isnan(res.start)
    dropped = set(res.dropped)
    for j, r in zip(w.jobs, ran, strict=True):
        assert r == (j.id not in dropped)
    assert np.all(~np.isnan(res.end[ran])), "a started job never finished"
    submit = np.array([j.submit for j in w.jobs])
    assert np.all(res.start[ran] >= submit[ran])
    runtime = np.array([j.runtime for j in w.jobs])
    assert np.allclose(res.end[ran] - res.start[ran], runtime[ran] * res.slowdown[ran])
    _check_capacity(w, res)


@given(workloads(), st.booleans(), st.sampled_from([1, 2, 500]))
def test_backfill_never_delays_a_head_past_its_reservation(w: Workload, effects: bool,
                                                           reservations: int) -> None:
    """Under a static order (FCFS), a blocked head starts no later than any reservation made for it
    (with more reservations per pass: the pass's first, the one recorded)."""
    cfg = SimConfig(effects=EffectsConfig() if effects else EffectsConfig.pure(), record=True,
                    bf_reservations=reservations)
    res = simulate(w, make_policy("fcfs"), cfg)
    for head, made, at in res.reservations:
        assert res.start[head] <= at + 1e-6, (w.jobs[head].id, made, at, res.start[head])


@given(workloads(), st.sampled_from(["fcfs", "wfp3", "multifactor"]), st.sampled_from([1, 3]))
def test_same_input_same_result_and_memo_is_exact(w: Workload, policy: str, reservations: int) -> None:
    cfg = SimConfig(bf_reservations=reservations)
    a = simulate(w, make_policy(policy), cfg)
    b = simulate(w, make_policy(policy), cfg)
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert a.metrics == b.metrics

    class NoMemo(Simulator):
        _memoize = False

    c = NoMemo(w, PolicyController(make_policy(policy)), cfg).run()
    assert np.array_equal(a.start, c.start, equal_nan=True)


def test_seeded_trace_gives_identical_evaluation() -> None:
    from rltune_daemon.traces import load_workload

    w1 = load_workload("testbed", seed=3)
    w2 = load_workload("testbed", seed=3)
    r1 = simulate(w1, make_policy("wfp3"))
    r2 = simulate(w2, make_policy("wfp3"))
    assert r1.metrics == r2.metrics
    w3 = load_workload("testbed", seed=4)
    assert simulate(w3, make_policy("wfp3")).metrics != r1.metrics


def reference_plan(sim: Simulator, head: int, prior: list[Reservation]) -> Reservation:
    """The first planner: tests each time free resources grow, taking the minimum over the earlier
    reservations' starts inside the job's time, one reservation at a time."""
    first = sim._reserve(head, log=not prior)
    if first.free is None:
        return first
    dur = float(sim.limit[head])
    mask = sim._mask(sim.hints[head]) if head in sim.hints else None
    live = [r for r in prior if r.alloc is not None and r.until > first.at]
    order = np.argsort(sim.cl.run_end, kind="stable")
    ends = sim.cl.run_end[order]

    def free_at(p: float) -> FreeView:
        fv = sim._released(order[: int(np.searchsorted(ends, p, side="right"))])
        for r in live:
            if r.at <= p < r.until:
                assert r.alloc is not None
                take(fv, r.alloc)
        return fv

    cands = np.unique(np.concatenate([[first.at], ends[ends > first.at],
                                      [r.until for r in live if r.until > first.at]]))
    for t in (float(c) for c in cands):
        view = free_at(t)
        for r in live:
            if t < r.at < t + dur:
                later = free_at(r.at)
                view = FreeView(np.minimum(view.gpus, later.gpus), np.minimum(view.cpus, later.cpus),
                                np.minimum(view.mem, later.mem))
        alloc = allocate(sim.cl, sim.elig, sim.shapes, head, int(sim.table.gpus[head]), PlacementKind.PACK,
                         view, mask)
        if alloc is not None:
            return Reservation(head, t, view, t + dur, alloc)
    return Reservation(head, math.inf, None)


class CheckedSimulator(Simulator):
    """Plans every reservation both ways and fails on the first difference."""

    planned = 0

    def _plan_reservation(self, head: int, prior: list[Reservation]) -> Reservation:
        got = super()._plan_reservation(head, prior)
        want = reference_plan(self, head, prior)
        assert (got.at, got.until) == (want.at, want.until), (head, got.at, want.at)
        assert (got.free is None) == (want.free is None)
        if got.free is not None and want.free is not None:
            for a, b in ((got.free.gpus, want.free.gpus), (got.free.cpus, want.free.cpus),
                         (got.free.mem, want.free.mem)):
                assert np.array_equal(a, b)
        assert (got.alloc is None) == (want.alloc is None)
        if got.alloc is not None and want.alloc is not None:
            assert np.array_equal(got.alloc.nodes, want.alloc.nodes)
            assert np.array_equal(got.alloc.gpus, want.alloc.gpus)
        type(self).planned += 1
        return got


@given(workloads(), st.sampled_from(["fcfs", "sjf", "multifactor"]), st.sampled_from([2, 500]))
def test_vectorised_reservation_planner_equals_the_reference(w: Workload, policy: str,
                                                             reservations: int) -> None:
    cfg = SimConfig(bf_reservations=reservations)
    CheckedSimulator(w, PolicyController(make_policy(policy)), cfg).run()


def test_vectorised_planner_on_a_trace_window_with_node_hints() -> None:
    """Daemon mode on the testbed (three GPU types, pinned and multi-node jobs, the MILP's ReqNodeList
    hints): every reservation the planner makes equals the reference's, and so does the outcome."""
    from rltune_daemon.evaluate.runner import EvalConfig, make_controller
    from rltune_daemon.traces import load_workload

    w = load_workload("testbed", seed=3)
    window = w.with_jobs(w.jobs[200:500])
    cfg = EvalConfig(trace="testbed", policies=("daemon:multifactor",), bf_reservations=500)

    def controller() -> Controller:
        return make_controller("daemon:multifactor", w, cfg)

    CheckedSimulator.planned = 0
    checked = CheckedSimulator(window, controller(), cfg.sim_config()).run()
    assert CheckedSimulator.planned > 100  # the window exercises the planner
    plain = Simulator(window, controller(), cfg.sim_config()).run()
    assert np.array_equal(checked.start, plain.start, equal_nan=True)
