"""``plan(snapshot, policy, config)``: rank pending jobs, guard against starvation, choose placements for
the top-K, and express the result as SiteFactor targets and node hints with a human reason per job.

The simulator's daemon mode builds a ``Snapshot`` from its own state and calls this same function, so a
decision is computed by one code path whether the cluster is real or simulated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, ClusterArrays, JobTable
from rltune_daemon.domain.plan import DEFAULT_PLACEMENT, Placement, PlacementKind, Plan, PlanEntry
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.domain.snapshot import PendingState, Snapshot
from rltune_daemon.harm import size_classes
from rltune_daemon.placement.allocate import Allocation, FreeView, fits
from rltune_daemon.placement.context import PlacementContext, Placer
from rltune_daemon.placement.greedy import greedy_allocations, greedy_placer
from rltune_daemon.placement.shapes import EligibilityIndex, JobShapes, job_shapes
from rltune_daemon.planner.config import PlannerConfig
from rltune_daemon.planner.priorities import realizes, retarget, site_factors
from rltune_daemon.planner.reasons import Reasons
from rltune_daemon.policies.base import Policy


@dataclass
class PlannerMemory:
    """State carried between cycles: since when each job has been below its guard position (its
    multifactor position unless ``starvation_reference`` says otherwise); each job's base priority at
    the last plan and the gap planned priorities keep (``priority_gap``)."""

    demoted_since: dict[str, float] = field(default_factory=dict)
    last_base: dict[str, int] = field(default_factory=dict)
    gap: int = 1

    def priority_gap(self, ids: Sequence[str], base: I64) -> int:
        """Points between planned priorities: one more than the most the bases have moved in one cycle
        (99th percentile over jobs), never shrinking. Slurm recomputes a job's age and fair share when
        its SiteFactor is written and every other job's only at the next ``PriorityCalcPeriod``, so
        jobs written a moment apart drift by about that much; targets closer than that invert at once
        and would be rewritten every cycle, and a gap that shrank and grew again would rewrite them all."""
        last = self.last_base
        values: list[int] = base.tolist()
        moved = [abs(b - last[j]) for j, b in zip(ids, values, strict=True) if j in last]
        if moved:
            self.gap = max(self.gap, 1 + int(np.percentile(moved, 99)))
        self.last_base = dict(zip(ids, values, strict=True))
        return self.gap


@dataclass(frozen=True)
class PlanInputs:
    """A snapshot in columnar form: every pending job (exempt ones too) and the cluster state."""

    snapshot: Snapshot
    table: JobTable
    cluster: ClusterArrays
    elig: EligibilityIndex
    base: I64  # multifactor priority without our SiteFactor

    @cached_property
    def shapes(self) -> JobShapes:
        """Every row's shape (``placement.shapes.job_shapes``), computed once per plan."""
        return job_shapes(self.table, self.elig)


def inputs_from(snapshot: Snapshot) -> PlanInputs:
    spec = snapshot.cluster()
    table = JobTable.from_jobs(snapshot.pending, spec, snapshot.pending_state)
    cluster = ClusterArrays.from_state(spec, snapshot.nodes, snapshot.running)
    base = np.fromiter((s.priority - s.site_factor for s in snapshot.pending_state), dtype=np.int64,
                       count=len(snapshot.pending_state))
    return PlanInputs(snapshot, table, cluster, EligibilityIndex.build(cluster), base)


def exemption(job_state: PendingState, qos: str, partition: str, user: str, account: str,
              cfg: PlannerConfig) -> str:
    """Why a job must not be touched, or "" if it may be planned."""
    if job_state.held:
        return "held"
    if job_state.admin_priority:
        return "priority set by an admin"
    if qos and qos in cfg.exempt_qos:
        return f"exempt QoS {qos}"
    if partition and partition in cfg.exempt_partitions:
        return f"exempt partition {partition}"
    if user and user in cfg.exempt_users:
        return f"exempt user {user}"
    if account and account in cfg.exempt_accounts:
        return f"exempt account {account}"
    if cfg.only_users and user not in cfg.only_users:
        return "user outside [scope] users"
    if cfg.only_accounts and account not in cfg.only_accounts:
        return "account outside [scope] accounts"
    return ""


def _base_rank(base: I64, submit: F64, rows: I64) -> dict[int, int]:
    """Position of each row under Slurm's own order (priority desc, then submit)."""
    order = rows[np.lexsort((rows, submit[rows], -base[rows]))]
    return dict(zip(order.tolist(), range(len(order)), strict=True))


def _guard_rank(cfg: PlannerConfig, base: I64, submit: F64, rows: I64) -> dict[int, int]:
    """The position the starvation guard measures each row against and restores it to."""
    by_priority = _base_rank(base, submit, rows) if cfg.starvation_reference != "submit" else {}
    if cfg.starvation_reference == "priority":
        return by_priority
    by_submit = _base_rank(np.zeros_like(base), submit, rows)
    if cfg.starvation_reference == "submit":
        return by_submit
    return {r: min(k, by_priority[r]) for r, k in by_submit.items()}


def plan(
    snapshot: Snapshot,
    policy: Policy,
    config: PlannerConfig | None = None,
    memory: PlannerMemory | None = None,
    placer: Placer | None = None,
) -> Plan:
    """A Plan for ``snapshot``. ``memory`` is updated in place (starvation guard)."""
    cfg = config or PlannerConfig()
    mem = memory if memory is not None else PlannerMemory()
    inp = inputs_from(snapshot)
    return plan_inputs(inp, policy, cfg, mem, placer or greedy_placer)


def plan_inputs(inp: PlanInputs, policy: Policy, cfg: PlannerConfig, mem: PlannerMemory,
                placer: Placer) -> Plan:
    """The Plan for ``inp``: the policy's order of the plannable jobs, the starvation guard's lifts,
    the SiteFactors that realise that order, node hints for the top-K, and a reason per job."""
    table, now = inp.table, inp.snapshot.clock
    rows, skipped = _plannable(inp.snapshot, cfg)
    if not len(rows):
        return Plan(now, policy.name, (), tuple(skipped))
    ordered, score_of = _policy_order(inp, rows, policy)
    if cfg.reorder == "size-class":
        ordered = _in_class_places(inp, ordered, cfg.next_in_line)
    plan_rows, guarded = _starvation_guard(inp, ordered, cfg, mem)
    current, targets, sites = _priorities(inp, rows, plan_rows, mem)
    placements = _placements(inp, plan_rows, cfg, placer)
    base_pos = _base_rank(inp.base, table.submit, plan_rows)
    entries = []
    reasons = Reasons(table, now, policy.name, cfg.starvation_reference)
    ids = table.ids
    for k, (row, cur, target, site) in enumerate(zip(plan_rows.tolist(), current.tolist(), targets.tolist(),
                                                      sites.tolist(), strict=True)):
        place = placements.get(row, DEFAULT_PLACEMENT)
        starts = row in placements
        reason = reasons(row, k, base_pos[row], row in guarded, place, starts)
        entries.append(PlanEntry(job_id=ids[row], rank=k + 1, score=score_of[row], current_priority=cur,
                                 target_priority=target, site_factor=site, placement=place, reason=reason,
                                 starts_now=starts))
    return Plan(now, policy.name, tuple(entries), tuple(skipped))


def _plannable(snap: Snapshot, cfg: PlannerConfig) -> tuple[I64, list[tuple[str, str]]]:
    """The rows the plan may move, and ``(job id, why not)`` for every exempt job."""
    skipped: list[tuple[str, str]] = []
    keep: list[int] = []
    # without exempt or scope lists only a hold or an admin's priority exempts a job
    by_job = bool(cfg.exempt_qos or cfg.exempt_partitions or cfg.exempt_users or cfg.exempt_accounts
                  or cfg.only_users or cfg.only_accounts)
    for i, (job, st) in enumerate(zip(snap.pending, snap.pending_state, strict=True)):
        if not (by_job or st.held or st.admin_priority):
            keep.append(i)
            continue
        why = exemption(st, job.qos, job.partition, job.user, job.account, cfg)
        if why:
            skipped.append((job.id, why))
        else:
            keep.append(i)
    return np.array(keep, dtype=np.int64), skipped


def _policy_order(inp: PlanInputs, rows: I64, policy: Policy) -> tuple[I64, dict[int, float]]:
    """``rows`` in the policy's order (PriorityTier first, then score, submit, row), and each row's
    score for the plan's entries."""
    table = inp.table
    view = QueueView(table, rows, inp.snapshot.clock, inp.cluster, None)
    scores = policy.scores(view)
    order_pos = np.lexsort((rows, table.submit[rows], scores, -table.tier[rows]))
    score_of = dict(zip(rows.tolist(), np.asarray(scores, dtype=np.float64).tolist(), strict=True))
    return rows[order_pos], score_of


def _in_class_places(inp: PlanInputs, ordered: I64, next_in_line: int) -> I64:
    """``ordered`` (the policy's order) moved back into Slurm's interleaving of job classes: each class
    (PriorityTier, partition, size) keeps the places its jobs hold in Slurm's own order, and fills them
    with its jobs in the policy's order. A large job then waits behind as many jobs of other classes as
    under Slurm alone; only its own class's order changes. The jobs next in line (``_next_in_line``)
    keep their own places: the cluster is draining for them, and moving another job of their class into
    a place it drained for wastes the drain (that job may need other nodes) and delays the jobs behind."""
    table = inp.table
    slurm = ordered[np.lexsort((ordered, table.submit[ordered], -inp.base[ordered], -table.tier[ordered]))]
    gpus = table.gpus[slurm]
    size = np.where(gpus > 0, size_classes(gpus), -1)  # jobs without GPUs: a class of their own
    cls = _class_codes(table.tier[slurm], table.partition[slurm], size)
    pos_of = np.empty(len(table), dtype=np.int64)
    pos_of[ordered] = np.arange(len(ordered), dtype=np.int64)
    rank = pos_of[slurm]  # position in the policy's order
    movable = ~_next_in_line(inp, slurm, next_in_line)
    out = slurm.copy()
    for c in np.unique(cls):
        places = np.flatnonzero((cls == c) & movable)  # this class's places in Slurm's order
        out[places] = slurm[places][np.argsort(rank[places], kind="stable")]
    return out


def _class_codes(*columns: I64) -> I64:
    """One code per distinct tuple of the columns' values (the same job class, the same code)."""
    code = np.zeros(len(columns[0]), dtype=np.int64)
    for col in columns:
        _, inv = np.unique(col, return_inverse=True)
        code = code * (int(inv.max(initial=0)) + 1) + inv.reshape(-1)
        _, code = np.unique(code, return_inverse=True)  # re-compress: codes stay < n
        code = code.reshape(-1).astype(np.int64)
    return code


def _next_in_line(inp: PlanInputs, slurm: I64, n: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Per position of ``slurm`` (rows in Slurm's own order): whether the job is among the first ``n`` of
    its PriorityTier and partition that do not fit the free resources now, the jobs Slurm's backfill
    reserves nodes for first."""
    table = inp.table
    out = np.zeros(len(slurm), dtype=np.bool_)
    if n <= 0 or not len(slurm):
        return out
    shapes = inp.shapes
    free = FreeView(inp.cluster.gpus_free, inp.cluster.cpus_free, inp.cluster.mem_free)
    tiers, parts = table.tier[slurm].tolist(), table.partition[slurm].tolist()
    left = dict.fromkeys(zip(tiers, parts, strict=True), n)
    fit = _Fits(inp, shapes, free)
    for k, (r, key) in enumerate(zip(slurm.tolist(), zip(tiers, parts, strict=True), strict=True)):
        if not left[key]:
            continue
        if not fit(r):
            out[k] = True
            left[key] -= 1
            if not any(left.values()):
                break
    return out


class _Fits:
    """``shapes.feasible[row] and fits(...)`` under one ``free``, kept per distinct shape (the test
    reads nothing else of the row: its eligibility group, chunk, CPUs and memory per node, node count)."""

    def __init__(self, inp: PlanInputs, shapes: JobShapes, free: FreeView) -> None:
        self.inp, self.shapes, self.free = inp, shapes, free
        self.seen: dict[tuple[int, ...], bool] = {}
        self.columns = [a.tolist() for a in (shapes.group, shapes.chunk, shapes.cpus_node, shapes.mem_node,
                                             shapes.k, shapes.feasible)]

    def __call__(self, row: int) -> bool:
        key = tuple(c[row] for c in self.columns)
        hit = self.seen.get(key)
        if hit is None:
            inp = self.inp
            hit = self.seen[key] = bool(key[5] and fits(inp.cluster, inp.elig, self.shapes, row, self.free))
        return hit


def _starvation_guard(inp: PlanInputs, ordered: I64, cfg: PlannerConfig,
                      mem: PlannerMemory) -> tuple[I64, set[int]]:
    """The plan order: ``ordered`` with every job that has been below its guard position for its guard
    time or longer lifted back to that position (the longest-demoted first, at most
    ``starvation_slots`` per tier), and the lifted rows. Per PriorityTier, as SiteFactor cannot move
    a job across tiers; ``mem`` keeps since when each job has been demoted."""
    table, now = inp.table, inp.snapshot.clock
    guarded: set[int] = set()
    final: list[I64] = []
    ids, demoted_since = table.ids, mem.demoted_since
    limit_of = table.time_limit
    guard_of: dict[float, float] = {}  # guard seconds by time limit (a few distinct limits)
    for tier in sorted({int(t) for t in table.tier[ordered]}, reverse=True):
        tier_rows = ordered[table.tier[ordered] == tier]
        base_rank = _guard_rank(cfg, inp.base, table.submit, tier_rows)
        rows = tier_rows.tolist()
        b_of = [base_rank[r] for r in rows]
        starving: list[tuple[float, int, int]] = []  # (demoted since, guard rank, position)
        # a job below its guard position has been demoted since it first was; one at or above it is not
        for pos, (row, b) in enumerate(zip(rows, b_of, strict=True)):
            if pos > b:
                jid = ids[row]
                since = demoted_since.setdefault(jid, now)
                limit = float(limit_of[row])
                guard = guard_of.get(limit)
                if guard is None:
                    guard = guard_of[limit] = cfg.guard_seconds(limit)
                if now - since >= guard:
                    starving.append((since, b, pos))
        above = [ids[r] for pos, (r, b) in enumerate(zip(rows, b_of, strict=True)) if pos <= b]
        for jid in demoted_since.keys() & above:
            del demoted_since[jid]
        starving.sort()
        if cfg.starvation_slots > 0:
            starving = starving[: cfg.starvation_slots]
        lifted = {pos: b for _, b, pos in starving}
        guarded.update(rows[pos] for pos in lifted)
        if lifted:  # each lifted job just above the job at its guard position, the rest in order
            key = np.arange(len(rows), dtype=np.float64)
            for pos, b in lifted.items():
                key[pos] = b - 0.5
            positions = np.arange(len(rows), dtype=np.int64)
            final.append(tier_rows[np.lexsort((positions, key))])
        else:
            final.append(tier_rows)
    live = set(map(ids.__getitem__, ordered.tolist()))
    for jid in list(demoted_since):
        if jid not in live:
            del demoted_since[jid]
    out = np.concatenate(final).astype(np.int64) if final else np.array([], dtype=np.int64)
    return out, guarded


def _priorities(inp: PlanInputs, rows: I64, plan_rows: I64, mem: PlannerMemory) -> tuple[I64, I64, I64]:
    """Current priorities, target priorities and the SiteFactors that give them, in plan order: the
    current SiteFactors are reused where they already give the plan order, else the fewest jobs move."""
    table = inp.table
    ids = table.ids
    gap = mem.priority_gap([ids[r] for r in rows.tolist()], inp.base[rows])
    current = table.priority[plan_rows].astype(np.int64)
    targets = np.empty(len(plan_rows), dtype=np.int64)
    tiers = table.tier[plan_rows]
    for tier in np.unique(tiers):
        sel = np.flatnonzero(tiers == tier)
        cur = current[sel]
        in_order = realizes(cur, table.submit[plan_rows[sel]])
        targets[sel] = cur if in_order else retarget(cur, inp.base[plan_rows[sel]], gap)
    return current, targets, site_factors(inp.base[plan_rows], targets)


def _placements(inp: PlanInputs, plan_rows: I64, cfg: PlannerConfig, placer: Placer) -> dict[int, Placement]:
    """Node hints for the top-K jobs that can start now (none unless ``cfg.placement``)."""
    table, cluster = inp.table, inp.cluster
    shapes = inp.shapes
    placements: dict[int, Placement] = {}
    if cfg.placement:
        free = FreeView(cluster.gpus_free, cluster.cpus_free, cluster.mem_free)
        top = [int(r) for r in plan_rows[: cfg.top_k]
               if shapes.feasible[r] and fits(cluster, inp.elig, shapes, int(r), free)]
        if top:
            top_rows = np.array(top, dtype=np.int64)
            ctx = PlacementContext(table, shapes, cluster, inp.elig, cfg.effects)
            chosen = placer(ctx, top_rows).allocations
            default = greedy_allocations(ctx, top_rows)
            for row, alloc in chosen.items():
                placements[row] = _as_placement(alloc, default.get(row), cluster)
    return placements


def _as_placement(alloc: Allocation, default: Allocation | None, cl: ClusterArrays) -> Placement:
    """A node hint only where the chosen nodes differ from what Slurm would pick by itself."""
    if default is not None and np.array_equal(default.nodes, alloc.nodes) and np.array_equal(
            default.gpus, alloc.gpus):
        return Placement(PlacementKind.DEFAULT, ())
    return Placement(alloc.kind, tuple(cl.names[int(n)] for n in alloc.nodes))

