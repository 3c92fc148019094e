"""plan(): order, exemptions, tiers, starvation guard, placement hints, and one code path for
snapshots from a real Slurm and from the simulator."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from rltune_daemon.domain import (
    Job,
    NodeAlloc,
    NodeState,
    PartitionSpec,
    PendingState,
    PlacementKind,
    RunningJob,
    Snapshot,
    Workload,
)
from rltune_daemon.planner import PlannerConfig, PlannerMemory, plan
from rltune_daemon.policies import make_policy

plan_module = importlib.import_module("rltune_daemon.planner.plan")  # the package re-exports plan()

PARTS = (PartitionSpec("gpu"), PartitionSpec("hipri", priority_tier=2))


def node(name: str, gpus: int, used: int, gpu_type: str = "p100") -> NodeState:
    return NodeState(name=name, gpu_type=gpu_type, gpus=gpus, gpus_alloc=used, cpus=8, cpus_alloc=used,
                     mem_mb=64000, mem_alloc_mb=used * 1000, partitions=("gpu", "hipri"),
                     state="mixed" if used else "idle")


def snapshot(pending: list[tuple[Job, PendingState]], nodes: tuple[NodeState, ...], clock: float = 1000.0,
             running: tuple[RunningJob, ...] = ()) -> Snapshot:
    return Snapshot(clock, tuple(j for j, _ in pending), tuple(s for _, s in pending), running, nodes, PARTS)


FULL = (node("p100-1", 4, 4), node("p100-2", 4, 4))
QUEUE = PlannerConfig(reorder="queue")  # the policy may move any job past any other
# Most tests below plan on a full cluster, where every job is blocked: with nothing next in line kept in
# place, their policy's order shows.


def test_a_policy_reorders_each_size_class_in_the_places_slurm_gives_that_class() -> None:
    """Slurm's order (by priority without the daemon's SiteFactor) is e a f b c d: 1, 8, -, 1, 1, 8 GPUs.
    SJF reorders the 1-GPU jobs among the three places they hold and the 8-GPU jobs among their two: a
    large job still waits behind exactly as many small jobs as without the daemon. Per partition: the
    other partition's job keeps its place, though it is the shortest of all."""
    pend = [
        (Job("a", 0.0, 8, 7200.0, partition="gpu"), PendingState(priority=1900)),
        (Job("b", 0.0, 1, 3600.0, partition="gpu"), PendingState(priority=1800)),
        (Job("c", 0.0, 1, 600.0, partition="gpu"), PendingState(priority=1700)),
        (Job("d", 0.0, 8, 60.0, partition="gpu"), PendingState(priority=1600)),
        (Job("e", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=1550, site_factor=-400)),
        (Job("f", 0.0, 1, 10.0, partition="other"), PendingState(priority=1850)),
    ]
    parts = (*PARTS, PartitionSpec("other"))
    snap = Snapshot(1000.0, tuple(j for j, _ in pend), tuple(s for _, s in pend), (), FULL, parts)
    # e's own priority without the daemon's SiteFactor is 1950: Slurm alone would run it first
    sjf = make_policy("sjf")
    assert plan(snap, sjf, PlannerConfig(next_in_line=0)).order == ("e", "d", "f", "c", "b", "a")
    assert plan(snap, make_policy("sjf"), QUEUE).order == ("f", "d", "e", "c", "b", "a")
    # nothing fits the full cluster: the first two jobs of each partition keep their places (Slurm drains
    # for them); b, c and d move within their classes as before, in the places left
    assert plan(snap, sjf, PlannerConfig(next_in_line=2)).order == ("e", "a", "f", "c", "b", "d")
    # a job that fits the free GPUs now is not next in line: it starts, and the next blocked one is kept
    free = (node("p100-1", 4, 3), node("p100-2", 4, 4))
    snap_free = Snapshot(1000.0, snap.pending, snap.pending_state, (), free, parts)
    assert plan(snap_free, sjf, PlannerConfig(next_in_line=1)).order == ("e", "a", "f", "c", "b", "d")


def test_plan_orders_by_policy_and_priorities_realize_it() -> None:
    pend = [
        (Job("10", 0.0, 1, 7200.0, partition="gpu", user="a"), PendingState(priority=1500)),
        (Job("11", 10.0, 1, 600.0, partition="gpu", user="b"), PendingState(priority=1400)),
        (Job("12", 20.0, 2, 60.0, partition="gpu", user="c"), PendingState(priority=1300, site_factor=100)),
    ]
    p = plan(snapshot(pend, FULL), make_policy("sjf"), QUEUE)
    assert p.order == ("12", "11", "10")
    # base = priority - site factor = 1500, 1400, 1200; job 12 carries a SiteFactor already, so the
    # jobs whose values can stay keep them (10 at 1500) and the others move above at the mean base gap
    assert [e.target_priority for e in p.entries] == [1700, 1600, 1500]
    assert [e.site_factor for e in p.entries] == [1700 - 1200, 1600 - 1400, 0]
    assert all(e.reason for e in p.entries)
    assert "up 2 (sjf)" in p.entries[0].reason


def test_an_unsteered_tier_gets_its_own_priorities_in_plan_order() -> None:
    pend = [
        (Job("10", 0.0, 1, 7200.0, partition="gpu", user="a"), PendingState(priority=1500)),
        (Job("11", 10.0, 1, 600.0, partition="gpu", user="b"), PendingState(priority=1400)),
        (Job("12", 20.0, 2, 60.0, partition="gpu", user="c"), PendingState(priority=1200)),
    ]
    p = plan(snapshot(pend, FULL), make_policy("sjf"), QUEUE)
    assert [e.target_priority for e in p.entries] == [1500, 1400, 1200]
    assert [e.site_factor for e in p.entries] == [1500 - 1200, 0, 1200 - 1500]


def test_current_site_factors_kept_when_they_already_give_the_order() -> None:
    pend = [
        (Job("1", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=2000, site_factor=700)),
        (Job("2", 0.0, 1, 600.0, partition="gpu"), PendingState(priority=1500)),
    ]
    p = plan(snapshot(pend, FULL), make_policy("sjf"), PlannerConfig(next_in_line=0))
    assert [e.site_factor for e in p.entries] == [700, 0]


def test_exempt_held_and_admin_jobs_are_skipped() -> None:
    cfg = PlannerConfig(next_in_line=0, exempt_users=("vip",), exempt_qos=("urgent",))
    pend = [
        (Job("1", 0.0, 1, 60.0, partition="gpu", user="vip"), PendingState(priority=1000)),
        (Job("2", 0.0, 1, 60.0, partition="gpu", qos="urgent"), PendingState(priority=1000)),
        (Job("3", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=0, held=True)),
        (Job("4", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=50000, admin_priority=True)),
        (Job("5", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=1000)),
    ]
    p = plan(snapshot(pend, FULL), make_policy("sjf"), cfg)
    assert p.order == ("5",)
    assert dict(p.skipped) == {"1": "exempt user vip", "2": "exempt QoS urgent", "3": "held",
                               "4": "priority set by an admin"}


def test_tiers_are_planned_separately() -> None:
    pend = [
        (Job("low", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=1000)),
        (Job("high", 0.0, 1, 9000.0, partition="hipri"), PendingState(priority=900)),
    ]
    p = plan(snapshot(pend, FULL), make_policy("sjf"))
    assert p.order == ("high", "low")  # PriorityTier first, whatever SJF says
    assert [e.site_factor for e in p.entries] == [0, 0]


def test_starvation_guard_restores_multifactor_position() -> None:
    cfg = PlannerConfig(next_in_line=0, starvation_seconds=3600.0, starvation_stretch=0.0)
    mem = PlannerMemory()
    pend = [
        (Job("old-long", 0.0, 1, 90000.0, partition="gpu"), PendingState(priority=5000)),
        (Job("short", 5.0, 1, 60.0, partition="gpu"), PendingState(priority=1000)),
    ]
    p1 = plan(snapshot(pend, FULL, clock=1000.0), make_policy("sjf"), cfg, mem)
    assert p1.order == ("short", "old-long")
    assert mem.demoted_since == {"old-long": 1000.0}
    p2 = plan(snapshot(pend, FULL, clock=1000.0 + 3599.0), make_policy("sjf"), cfg, mem)
    assert p2.order == ("short", "old-long")
    p3 = plan(snapshot(pend, FULL, clock=1000.0 + 3600.0), make_policy("sjf"), cfg, mem)
    assert p3.order == ("old-long", "short")
    assert p3.entries[0].reason.startswith("starvation guard")


@pytest.mark.parametrize(("reference", "restored"), [("priority", False), ("submit", True), ("both", True)])
def test_starvation_reference_submit_order_restores_a_job_multifactor_itself_keeps_back(
        reference: str, restored: bool) -> None:
    """A job submitted first but low in multifactor order (a big job behind small ones) is never kept
    below its multifactor position, so the default guard leaves it; measured against submit order it
    is kept back and, after the guard time, goes back to the head of the queue."""
    cfg = PlannerConfig(next_in_line=0, starvation_seconds=3600.0, starvation_stretch=0.0,
                        starvation_reference=reference)  # type: ignore[arg-type]
    mem = PlannerMemory()
    pend = [
        (Job("big-old", 0.0, 1, 90000.0, partition="gpu"), PendingState(priority=1000)),
        (Job("small", 5.0, 1, 60.0, partition="gpu"), PendingState(priority=5000)),
    ]
    sjf = make_policy("sjf")
    assert plan(snapshot(pend, FULL, clock=1000.0), sjf, cfg, mem).order == ("small", "big-old")
    late = plan(snapshot(pend, FULL, clock=1000.0 + 3600.0), sjf, cfg, mem)
    assert late.order == (("big-old", "small") if restored else ("small", "big-old"))
    assert late.entries[0].reason.startswith("starvation guard") is restored
    if restored:
        assert "submit-order position" in late.entries[0].reason


def test_starvation_slots_restore_the_longest_kept_back_jobs_first() -> None:
    """Three long jobs kept back behind short ones: with ``starvation_slots=1`` only the one kept back
    longest (then: first in multifactor order) is restored; when it leaves the queue, the next one is."""
    cfg = PlannerConfig(next_in_line=0, starvation_seconds=3600.0, starvation_slots=1, starvation_stretch=0.0)
    mem = PlannerMemory()
    longs = [(Job(f"long{k}", float(k), 1, 90000.0, partition="gpu"), PendingState(priority=5000 - k))
             for k in range(3)]
    shorts = [(Job(f"short{k}", 10.0 + k, 1, 60.0, partition="gpu"), PendingState(priority=1000 - k))
              for k in range(2)]
    sjf = make_policy("sjf")
    plan(snapshot(longs[1:] + shorts, FULL, clock=1000.0), sjf, cfg, mem)  # long1, long2 kept back first
    plan(snapshot(longs + shorts, FULL, clock=1500.0), sjf, cfg, mem)
    p = plan(snapshot(longs + shorts, FULL, clock=1000.0 + 3600.0), sjf, cfg, mem)
    assert p.order == ("short0", "long1", "short1", "long0", "long2")  # back at its multifactor rank 2
    assert [e.job_id for e in p.entries if e.reason.startswith("starvation guard")] == ["long1"]
    p = plan(snapshot([longs[0], longs[2], *shorts], FULL, clock=1000.0 + 3600.0), sjf, cfg, mem)
    assert p.order[1] == "long2"  # kept back since 1000; long0 only since 1500
    every = plan(snapshot(longs + shorts, FULL, clock=9000.0), sjf,
                 PlannerConfig(next_in_line=0, starvation_seconds=3600.0, starvation_stretch=0.0),
                 PlannerMemory({"long0": 0.0, "long1": 0.0, "long2": 0.0}))
    assert every.order == ("long0", "short0", "long1", "short1", "long2")  # slots 0: all restored


def test_starvation_stretch_scales_the_guard_with_the_time_limit_up_to_the_cap() -> None:
    """With ``starvation_stretch=2`` a 10-h job may stay kept back 20 h (not the 1-h floor), a 1-year
    (UNLIMITED) job only up to the cap, and a 10-min job still only the floor."""
    cfg = PlannerConfig(next_in_line=0, starvation_seconds=3600.0, starvation_stretch=2.0,
                        starvation_cap_seconds=86400.0)
    assert cfg.guard_seconds(600.0) == 3600.0
    assert cfg.guard_seconds(36000.0) == 72000.0
    assert cfg.guard_seconds(365 * 86400.0) == 86400.0
    assert PlannerConfig(starvation_seconds=3600.0, starvation_stretch=0.0).guard_seconds(36000.0) == 3600.0
    pend = [
        (Job("long", 0.0, 1, 36000.0, partition="gpu"), PendingState(priority=5000)),
        (Job("forever", 1.0, 1, 365 * 86400.0, partition="gpu"), PendingState(priority=4000)),
        (Job("short", 5.0, 1, 60.0, partition="gpu"), PendingState(priority=1000)),
    ]
    sjf = make_policy("sjf")

    def guarded(clock: float) -> list[str]:
        p = plan(snapshot(pend, FULL, clock=clock), sjf, cfg, PlannerMemory({"long": 0.0, "forever": 0.0}))
        return [e.job_id for e in p.entries if e.reason.startswith("starvation guard")]

    assert guarded(3600.0) == []  # the 1-h floor no longer applies to either long job
    assert guarded(72000.0 - 1) == []
    assert guarded(72000.0) == ["long"]
    assert guarded(86400.0) == ["long", "forever"]


def test_hints_only_where_the_placer_differs_from_slurm_default() -> None:
    from rltune_daemon.placement.allocate import allocate
    from rltune_daemon.placement.context import PlacementContext, PlacementResult

    nodes = (node("p100-1", 4, 2), node("p100-2", 4, 0))
    pend = [(Job("a", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=1000)),
            (Job("b", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=900))]

    def spread_first(ctx: PlacementContext, rows: np.ndarray) -> PlacementResult:
        row = int(rows[0])
        alloc = allocate(ctx.cluster, ctx.elig, ctx.shapes, row, 1, PlacementKind.SPREAD)
        assert alloc is not None
        return PlacementResult({row: alloc}, "test")

    p = plan(snapshot(pend, nodes), make_policy("fcfs"), placer=spread_first)
    a, b = p.entries
    assert a.placement.kind is PlacementKind.SPREAD and a.placement.nodes == ("p100-2",)
    assert "starts now on p100-2 (spread)" in a.reason
    assert not b.placement.is_hint
    # the default placer = Slurm's own choice: no hint at all
    p = plan(snapshot(pend, nodes), make_policy("fcfs"))
    assert not any(e.placement.is_hint for e in p.entries)
    assert "starts now" in p.entries[0].reason and p.entries[0].starts_now


def test_running_jobs_are_never_planned() -> None:
    run = RunningJob(Job("r", 0.0, 4, 100.0, partition="gpu"), 0.0, 100.0, (NodeAlloc("p100-1", 4, 4, 4000),))
    pend = [(Job("p", 0.0, 1, 60.0, partition="gpu"), PendingState(priority=10))]
    p = plan(snapshot(pend, FULL, running=(run,)), make_policy("sjf"))
    assert p.order == ("p",)


def _captured_slurm_snapshot() -> Snapshot:
    from rltune_daemon.slurm.assemble import build_snapshot
    from rltune_daemon.slurm.parse import parse_sinfo_nodes, parse_sprio, parse_squeue_jobs, parse_squeue_tres

    d = Path(__file__).resolve().parents[1] / "fixtures" / "slurm" / "captured"

    def read(name: str) -> str:  # as the reader decodes Slurm's output: one character per byte
        return (d / name).read_bytes().decode("latin-1")

    jobs = parse_squeue_jobs(read("squeue_jobs.txt"))
    tres = parse_squeue_tres(read("squeue_tres.txt"))
    prio = parse_sprio(read("sprio.txt"))
    nodes = parse_sinfo_nodes(read("sinfo_nodes.txt"))
    by_job: dict[str, list] = {}  # type: ignore[type-arg]
    for rec in prio.records:
        by_job.setdefault(rec.job_id, []).append(rec)
    snap, _ = build_snapshot(1.8e9, jobs.records, {t.job_id: t for t in tres.records}, by_job, nodes.records)
    return snap


def _sim_snapshot() -> Snapshot:
    from rltune_daemon.sim import Simulator
    from rltune_daemon.sim.daemon import DaemonModeController
    from rltune_daemon.sim.view import SimView
    from rltune_daemon.traces import load_workload

    w = load_workload("testbed")
    w = Workload(w.name, w.cluster, w.jobs[:60], w.estimates)
    captured: list[Snapshot] = []

    class Spy(DaemonModeController):
        def on_tick(self, sim: SimView) -> None:
            if not captured and len(sim.pending_rows()) >= 3:
                captured.append(sim.snapshot())
            super().on_tick(sim)

    Simulator(w, Spy(make_policy("sjf"))).run()
    return captured[0]


def test_slurm_and_simulator_snapshots_go_through_identical_code(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = plan_module.plan_inputs

    def spy(inp: plan_module.PlanInputs, *args: object, **kwargs: object) -> object:
        seen.append(inp.snapshot.source or "slurm")
        return real(inp, *args, **kwargs)  # type: ignore[arg-type]

    slurm_snap, sim_snap = _captured_slurm_snapshot(), _sim_snapshot()
    monkeypatch.setattr(plan_module, "plan_inputs", spy)
    assert type(slurm_snap) is type(sim_snap) is Snapshot
    for snap in (slurm_snap, sim_snap):
        p = plan_module.plan(snap, make_policy("sjf"))
        planned = set(p.order) | {jid for jid, _ in p.skipped}
        assert planned == {j.id for j in snap.pending}
    assert seen == ["slurm", "simulator"]


def test_scope_leaves_everyone_elses_jobs_alone() -> None:
    pend = [
        (Job("1", 0.0, 1, 7200.0, partition="gpu", user="alice", account="a"), PendingState(priority=1500)),
        (Job("2", 0.0, 1, 60.0, partition="gpu", user="bob", account="a"), PendingState(priority=1400)),
        (Job("3", 0.0, 1, 600.0, partition="gpu", user="alice", account="b"), PendingState(priority=1300)),
    ]
    p = plan(snapshot(pend, FULL), make_policy("sjf"), PlannerConfig(next_in_line=0, only_users=("alice",)))
    assert p.order == ("3", "1") and dict(p.skipped) == {"2": "user outside [scope] users"}
    p = plan(snapshot(pend, FULL), make_policy("sjf"), PlannerConfig(next_in_line=0, only_accounts=("a",)))
    assert p.order == ("2", "1") and dict(p.skipped) == {"3": "account outside [scope] accounts"}
