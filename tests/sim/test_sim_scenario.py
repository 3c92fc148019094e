"""A small scenario traced by hand (two 4-GPU nodes, FCFS, effects off).

t=0   J1 4 GPUs 100 s on n0; J2 2 GPUs 200 s on n1 (2 GPUs of n1 left)
t=10  J3 asks both whole nodes: blocked; its reservation is t=200 (J2's requested end)
t=20  J4 2 GPUs, 150 s asked: fits n1 now and ends at 170 <= 200 -> backfill MUST happen
t=30  J5 1 GPU, 300 s asked: at t=100 n0 is free, but J5 would run past 200 on a node J3 needs
      -> backfill must NOT happen; J5 waits until J3 ends at 300
t=110 J6 4 GPUs, 80 s asked: n0 free, ends at 190 <= 200 -> backfill MUST happen
t=200 J3 starts (J2 ended); t=300 J3 ends, J5 starts.
"""

from __future__ import annotations

import numpy as np
import pytest

from rltune_daemon.domain import ClusterSpec, Job, NodeSpec, Workload
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.policies import make_policy
from rltune_daemon.sim import SimConfig, simulate

CLUSTER = ClusterSpec("two", (NodeSpec("n0", "v100", 4, 16, 64000), NodeSpec("n1", "v100", 4, 16, 64000)))
JOBS = (
    Job("J1", 0, 4, 100, runtime=100),
    Job("J2", 0, 2, 200, runtime=200),
    Job("J3", 10, 8, 100, runtime=100),
    Job("J4", 20, 2, 150, runtime=150),
    Job("J5", 30, 1, 300, runtime=300),
    Job("J6", 110, 4, 80, runtime=80),
)
PURE = SimConfig(effects=EffectsConfig.pure(), record=True)


def run(cfg: SimConfig = PURE) -> dict[str, float]:
    res = simulate(Workload("hand", CLUSTER, JOBS), make_policy("fcfs"), cfg)
    return {j.id: float(s) for j, s in zip(JOBS, res.start, strict=True)}


def test_hand_traced_starts() -> None:
    assert run() == {"J1": 0, "J2": 0, "J3": 200, "J4": 20, "J5": 300, "J6": 110}


def test_hand_traced_metrics() -> None:
    res = simulate(Workload("hand", CLUSTER, JOBS), make_policy("fcfs"), PURE)
    waits = [0, 0, 190, 0, 270, 0]
    runs = [100, 200, 100, 150, 300, 80]
    assert res.metrics["wait_mean"] == pytest.approx(np.mean(waits))
    bsld = [max((w + r) / max(r, 10), 1) for w, r in zip(waits, runs, strict=True)]
    assert res.metrics["bsld"] == pytest.approx(np.mean(bsld))
    assert res.metrics["makespan"] == pytest.approx(600.0)
    assert res.metrics["utilization"] == pytest.approx(
        (4 * 100 + 2 * 200 + 8 * 100 + 2 * 150 + 1 * 300 + 4 * 80) / (8 * 600))
    # the reservation made for J3 was t=200, and J3 started then
    assert any(head == 2 and at == 200.0 for head, _, at in res.reservations)


def test_without_backfill_everything_waits_for_the_head() -> None:
    starts = run(SimConfig(effects=EffectsConfig.pure(), backfill=False))
    assert starts == {"J1": 0, "J2": 0, "J3": 200, "J4": 300, "J5": 300, "J6": 300}


def test_colocation_slows_a_job_that_shares_a_node() -> None:
    jobs = (Job("a", 0, 2, 100, runtime=100), Job("b", 1, 2, 100, runtime=100))
    one = ClusterSpec("one", (NodeSpec("n0", "v100", 4, 16, 64000),))
    res = simulate(Workload("co", one, jobs), make_policy("fcfs"), SimConfig(effects=EffectsConfig(0.1, 0.0)))
    assert res.end.tolist() == pytest.approx([100.0, 1 + 110.0])
    assert res.slowdown.tolist() == pytest.approx([1.0, 1.1])


def test_cross_node_penalty_for_multi_node_job_on_shared_nodes() -> None:
    nodes = tuple(NodeSpec(f"n{i}", "v100", 4, 16, 64000) for i in range(2))
    jobs = (Job("small", 0, 1, 1000, runtime=1000), Job("big", 1, 6, 100, runtime=100))
    res = simulate(Workload("x", ClusterSpec("x", nodes), jobs), make_policy("fcfs"),
                   SimConfig(effects=EffectsConfig(0.1, 0.05)))
    # big spans two nodes, one shared with "small": 1 + 0.1 + 0.05 * (2 - 1)
    assert res.slowdown[1] == pytest.approx(1.15)


def test_gpu_type_constraint_is_respected() -> None:
    nodes = (NodeSpec("p", "p100", 4, 8, 64000), NodeSpec("k", "k80", 2, 8, 32000))
    k80 = ("k80",)
    jobs = (Job("on-k80", 0, 2, 50, runtime=50, gpu_types=k80),
            Job("also-k80", 0, 1, 50, runtime=50, gpu_types=k80))
    res = simulate(Workload("t", ClusterSpec("t", nodes), jobs), make_policy("fcfs"), PURE)
    assert res.start.tolist() == [0.0, 50.0]
    assert {int(n) for a in res.allocations.values() for n in a.nodes} == {1}


def test_infeasible_job_is_dropped_and_reported() -> None:
    jobs = (Job("ok", 0, 1, 10, runtime=10), Job("huge", 0, 64, 10, runtime=10))
    res = simulate(Workload("t", CLUSTER, jobs), make_policy("fcfs"), PURE)
    assert res.dropped == ["huge"]
    assert res.metrics["jobs"] == 1


def test_run_refuses_an_external_controller_and_iterate_serves_it() -> None:
    """``run()`` (through ``engine.drive``) cannot answer an order request: an external controller gets
    a clear error there, and the same workload completes through ``iterate()``."""
    from rltune_daemon.sim.controller import Controller
    from rltune_daemon.sim.engine import Simulator

    class Agent(Controller):
        external = True

    with pytest.raises(RuntimeError, match="needs iterate"):
        Simulator(Workload("hand", CLUSTER, JOBS), Agent(), PURE).run()
    steps = Simulator(Workload("hand", CLUSTER, JOBS), Agent(), PURE).iterate()
    pending = next(steps)
    try:
        while True:
            pending = steps.send(pending)
    except StopIteration as done:
        assert done.value.stats["started"] == len(JOBS)


def test_a_tick_never_sees_what_happens_at_its_own_instant() -> None:
    """A controller ticking every 10 s on this 10-s-aligned trace: at t=10 J3 (submitted at 10) is not
    yet pending and at t=100 J1 (ending at 100) still runs; both are seen at the next tick. A tick that
    saw same-instant events would re-plan before every scheduling pass, a reaction time no daemon has."""
    from rltune_daemon.sim.controller import PolicyController
    from rltune_daemon.sim.engine import Simulator
    from rltune_daemon.sim.view import SimView

    seen: dict[float, tuple[list[str], int]] = {}

    class Ticking(PolicyController):
        interval = 10.0

        def on_tick(self, sim: SimView) -> None:
            seen[sim.now] = ([sim.table.ids[int(r)] for r in sim.pending_rows()], len(sim.running_rows()))

    Simulator(Workload("hand", CLUSTER, JOBS), Ticking(make_policy("fcfs")), PURE).run()
    assert "J3" not in seen[10.0][0] and "J3" in seen[20.0][0]
    # at 100: J1 (ending at 100), J2, J4 still run; at 110: J2, J4, and J6 (submitted at 110) not yet
    assert seen[100.0][1] == 3 and seen[110.0][1] == 2 and "J6" not in seen[110.0][0]


# Reservations for more than the head (``bf_reservations``), traced by hand (FCFS, effects off):
# t=0   A (k80, 2 GPUs, 1000 s) on k0; B (4 GPUs, 300 s) on one P100 node
# t=10  C (k80, 2 GPUs) blocked: the head, reserved at 1000
# t=20  D (8 GPUs = both P100 nodes) blocked until B ends at 300
# t=30  E (1 GPU, 1000 s) fits the free P100 node now and cannot delay C (a K80 job).
#       EASY (1 reservation): E starts at 30 and D waits until E ends at 1030.
#       2 reservations: D is reserved at 300, E would delay it -> E waits until D ends at 400.
TYPED = ClusterSpec("typed", (NodeSpec("p0", "p100", 4, 16, 64000), NodeSpec("p1", "p100", 4, 16, 64000),
                              NodeSpec("k0", "k80", 2, 8, 32000)))
TYPED_JOBS = (
    Job("A", 0, 2, 1000, runtime=1000, gpu_types=("k80",)),
    Job("B", 0, 4, 300, runtime=300, gpu_types=("p100",)),
    Job("C", 10, 2, 100, runtime=100, gpu_types=("k80",)),
    Job("D", 20, 8, 100, runtime=100, gpu_types=("p100",)),
    Job("E", 30, 1, 1000, runtime=1000, gpu_types=("p100",)),
)


@pytest.mark.parametrize(("reservations", "expected"), [
    (1, {"A": 0, "B": 0, "C": 1000, "D": 1030, "E": 30}),
    (2, {"A": 0, "B": 0, "C": 1000, "D": 300, "E": 400}),
    (500, {"A": 0, "B": 0, "C": 1000, "D": 300, "E": 400}),
])
def test_reservations_beyond_the_head_protect_the_second_blocked_job(
        reservations: int, expected: dict[str, float]) -> None:
    cfg = SimConfig(effects=EffectsConfig.pure(), record=True, bf_reservations=reservations)
    res = simulate(Workload("typed", TYPED, TYPED_JOBS), make_policy("fcfs"), cfg)
    assert {j.id: float(s) for j, s in zip(TYPED_JOBS, res.start, strict=True)} == expected
    assert {at for head, _, at in res.reservations if head == 2} == {1000.0}  # C, the head, kept its time
