"""Invariants on random workloads: every job finishes, waits are never negative, no node is ever
over-allocated, backfill never delays a head job past its reservation, runs are deterministic, and
the pass's failure memo changes nothing; with one reservation per pass (EASY) and with more."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rltune_daemon.domain import ClusterSpec, Job, NodeSpec, PartitionSpec, Workload
from rltune_daemon.policies import make_policy
from rltune_daemon.sim import EffectsConfig, PolicyController, SimConfig, SimResult, Simulator, simulate

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
        jobs.append(Job(f"j{k}", t, gpus, limit, run, gpu_types=types, partition=part, cpus=cpus,
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
