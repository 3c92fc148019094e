"""Plan -> job updates (and back): which SiteFactors and node hints to write, and how to undo them.

Rules, each one there because breaking it could hurt a job:

* Priority goes through ``SiteFactor`` only (additive, reversible, FACTS a); the writer refuses
  ``Priority=``. Only jobs in the Plan get a new SiteFactor: the planner has already left out exempt,
  held and admin-prioritised jobs and planned within PriorityTiers. With ``leave_order`` (the
  ``multifactor`` base policy = Slurm's own order) no SiteFactor is written except to undo ours.
* A placement hint is written only for a pending job the Plan says can start *now*, whose user did
  not pin nodes (``-w``), whose own exclusions it respects, and whose Slurm reason says it waits only
  for priority/resources. The hint is an ``ExcNodeList`` of every other node, not a ``ReqNodeList``:
  on a job that started between our read and our write, ``ReqNodeList`` *shrinks* the running job to
  those nodes even when Slurm rejects the rest of the line (seen on 22.05), while ``ExcNodeList`` on a
  running job is rejected harmlessly ("Job is no longer pending execution").
* A hint lives at most ``hint_cycles`` cycles per job (all hints together): if the job has not started
  by then the user's own exclusions are put back and the job is never hinted again, so a hint can
  delay a job by at most ``hint_cycles`` intervals. A hint the new Plan no longer repeats is removed
  at once.
* Every field the daemon changes is recorded (``record``) with its original value, *before* the
  write. A value read back that is neither ours nor the one before our write was changed by someone
  else: the job becomes hands-off (our other changes to it are undone, then it is left alone).
* A record leaves the state file only on evidence: our own restore landed, the job's value is back at
  its original, or Slurm confirms the job ended or no longer exists (``integrity.Fate``). A read that
  does not list a job proves nothing (a cut output, a job between states), so its record stays.
* A cycle may send at most ``limit`` jobs' updates: undoing our own changes first, then hints, then
  priorities in plan order; the rest follow in later cycles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from rltune_daemon.core.record import DaemonState, FieldChange, JobRecord, Value
from rltune_daemon.domain import PendingState, Plan, PlanEntry, Snapshot
from rltune_daemon.domain.updates import ApplyResult, Fate, JobUpdate, UpdateStatus
from rltune_daemon.formats.slurm import expand_hostlist

SITE, EXC, REQ = "site_factor", "exc_nodes", "req_nodes"
FIELD_LABEL = {SITE: "SiteFactor", EXC: "ExcNodeList", REQ: "ReqNodeList"}
# squeue reasons of jobs that wait only for their turn or for free resources: anything else (Dependency,
# BeginTime, QOS/association limits, ReqNodeNotAvail...) keeps a job pending whatever its placement.
STARTABLE_REASONS = frozenset({"", "None", "Priority", "Resources"})

Kind = Literal["priority", "hint", "clear", "expire", "release", "restore"]
# which jobs' updates go first when a cycle may not send them all: putting our own values back, then
# hints (for jobs that start now), then priorities (in plan order: the head of the queue starts first)
URGENCY: dict[Kind, int] = {"restore": 0, "release": 0, "clear": 0, "expire": 0, "hint": 1, "priority": 2}


def starts_now(e: PlanEntry) -> bool:
    """Whether the planner found room for the job now."""
    return e.starts_now


def main_pass_jobs(plan: Plan) -> frozenset[str]:
    """Jobs Slurm's main scheduler starts at once: those that fit now, in plan order, before the first
    one that does not. A job behind a blocked one can only be backfilled, and a hint could hold it
    back there (the backfill reservation of the blocked job is not in the plan), so it gets none."""
    out = []
    for e in plan.entries:
        if not starts_now(e):
            break
        out.append(e.job_id)
    return frozenset(out)


def node_tuple(hostlist: str) -> tuple[str, ...]:
    return tuple(sorted(set(expand_hostlist(hostlist)))) if hostlist else ()


def observed(st: PendingState, name: str) -> Value:
    """The current value of a field as the snapshot shows it."""
    if name == SITE:
        return st.site_factor
    return node_tuple(st.exc_nodes if name == EXC else st.req_nodes)


def same(a: Value, b: Value) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return set(a) == set(b)
    return a == b


@dataclass(frozen=True, slots=True)
class Change:
    """One field of one job to set. ``nodes``: the hinted nodes of a ``hint``."""

    job_id: str
    field: str
    value: Value
    kind: Kind
    nodes: tuple[str, ...] = ()


@dataclass
class Decision:
    """What one cycle (or a restore) wants to write, plus notes for the log."""

    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # restore: running jobs' records that stay, and why
    unresolved: dict[str, str] = field(default_factory=dict)  # restore: jobs it could not put back, and why
    deferred: int = 0  # jobs whose updates wait for a later cycle (``limit``)

    def limit(self, max_jobs: int) -> Decision:
        """The same decision with at most ``max_jobs`` jobs' updates, the most urgent first (``URGENCY``,
        then the order ``decide`` produced them in); ``deferred`` counts the jobs left for later."""
        rank: dict[str, tuple[int, int]] = {}
        for i, ch in enumerate(self.changes):
            key = (URGENCY[ch.kind], i)
            rank[ch.job_id] = min(rank.get(ch.job_id, key), key)
        if len(rank) <= max_jobs:
            return self
        keep = set(sorted(rank, key=rank.__getitem__)[:max_jobs])
        return dataclasses.replace(self, changes=[c for c in self.changes if c.job_id in keep],
                                   deferred=len(rank) - len(keep))

    def updates(self) -> list[JobUpdate]:
        """One ``JobUpdate`` per job with every field this decision changes."""
        per_job: dict[str, dict[str, Value]] = {}
        for ch in self.changes:
            per_job.setdefault(ch.job_id, {})[ch.field] = ch.value
        out = []
        for job_id, fields in per_job.items():
            site = fields.get(SITE)
            exc = fields.get(EXC)
            req = fields.get(REQ)
            out.append(JobUpdate(
                job_id,
                site_factor=site if isinstance(site, int) else None,
                exc_nodes=exc if isinstance(exc, tuple) else None,
                req_nodes=req if isinstance(req, tuple) else None,
            ))
        return out

    def hints(self) -> dict[str, tuple[str, ...]]:
        return {c.job_id: c.nodes for c in self.changes if c.kind == "hint"}


@dataclass
class Settled:
    """Counts of one apply, by what was asked and what Slurm said."""

    priority_applied: int = 0
    hints_set: int = 0
    hints_cleared: int = 0
    hints_expired: int = 0
    restored: int = 0
    changed_jobs: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)


def _pending(snapshot: Snapshot) -> dict[str, PendingState]:
    return {j.id: s for j, s in zip(snapshot.pending, snapshot.pending_state, strict=True)}


class Applier:
    """The rules of the module docstring over a ``DaemonState`` (it keeps no state between calls)."""

    def __init__(self, hint_cycles: int = 2, placement: bool = True) -> None:
        if hint_cycles < 1:
            raise ValueError("hint_cycles must be >= 1")
        self.hint_cycles = hint_cycles
        self.placement = placement
        self._planned_nodes: frozenset[str] = frozenset()

    # ---- 1. what Slurm shows now vs what we recorded -------------------------------------------

    def reconcile(self, state: DaemonState, snapshot: Snapshot,
                  site_unknown: Collection[str] = frozenset(),
                  fates: Mapping[str, Fate] | None = None) -> list[str]:
        """Settle unconfirmed writes, age hints, notice outside changes and requeues, forget jobs Slurm
        confirms are over (``fates``, for recorded jobs the read did not list). Returns notes for the
        log."""
        pending = _pending(snapshot)
        running = {r.job.id for r in snapshot.running}
        over = {j for j, f in (fates or {}).items() if f.over}
        notes: list[str] = []
        for job_id in list(state.jobs):
            rec = state.jobs[job_id]
            st = pending.get(job_id)
            if st is None:
                if job_id in running:
                    rec.started = True
                elif job_id in over:
                    del state.jobs[job_id]
                continue
            if rec.started:  # requeued: it goes back to Slurm's own placement
                rec.started, rec.hint_done = False, True
                notes.append(f"job {job_id} was requeued: its node hint is removed")
            for name, fc in list(rec.fields.items()):
                if name == SITE and job_id in site_unknown:
                    continue  # sprio did not list it yet: nothing to compare with
                now = observed(st, name)
                if same(now, fc.value):
                    fc.confirmed, fc.previous = True, fc.value
                elif not fc.confirmed and same(now, fc.previous):
                    fc.value, fc.confirmed = fc.previous, True  # our write did not land
                else:
                    del rec.fields[name]
                    why = f"{FIELD_LABEL[name]} changed outside rltune-daemon"
                    state.hands_off[job_id] = why
                    notes.append(f"job {job_id}: {why} ({fc.value!r} -> {now!r}); leaving it alone")
                    continue
                if fc.confirmed and same(fc.value, fc.original):
                    del rec.fields[name]
            if EXC not in rec.fields:
                rec.hint_nodes = ()
            elif rec.hint_nodes:
                rec.hint_age += 1
            if rec.empty():
                del state.jobs[job_id]
        for job_id, st in pending.items():
            if (job_id not in state.jobs and job_id not in state.hands_off and st.site_factor != 0
                    and job_id not in site_unknown and not st.admin_priority):
                state.hands_off[job_id] = "SiteFactor set outside rltune-daemon"
        for job_id in list(state.hands_off):
            if job_id in running or job_id in over:
                del state.hands_off[job_id]
        return notes

    @staticmethod
    def planning_snapshot(state: DaemonState, snapshot: Snapshot) -> Snapshot:
        """The snapshot the planner sees: hands-off jobs are marked admin-owned, so it skips them."""
        if not state.hands_off:
            return snapshot
        states = tuple(
            dataclasses.replace(st, admin_priority=True) if j.id in state.hands_off else st
            for j, st in zip(snapshot.pending, snapshot.pending_state, strict=True)
        )
        return dataclasses.replace(snapshot, pending_state=states)

    @staticmethod
    def relabel(plan: Plan, state: DaemonState) -> Plan:
        """Skip reasons that say why a job is hands-off instead of "priority set by an admin"."""
        if not state.hands_off:
            return plan
        skipped = tuple((j, state.hands_off.get(j, why)) for j, why in plan.skipped)
        return dataclasses.replace(plan, skipped=skipped)

    # ---- 2. what to write -----------------------------------------------------------------------

    def may_hint(self, st: PendingState, entry: PlanEntry, rec: JobRecord | None,
                 main_pass: Collection[str] = ()) -> str:
        """"" when ``entry``'s placement may become a hint, else why not."""
        if not self.placement or not entry.placement.is_hint:
            return "no hint in the plan"
        if entry.job_id not in main_pass:
            return "behind a job that cannot start now (backfill only)"
        if st.array_job_id and st.array_job_id == entry.job_id:
            return "whole job array"
        if st.req_nodes:
            return "the user chose nodes (-w)"
        if st.reason not in STARTABLE_REASONS:
            return f"waits for {st.reason}"
        own_exc = set(node_tuple(st.exc_nodes)) if rec is None or EXC not in rec.fields else set(
            _nodes(rec.fields[EXC].original))
        if own_exc & set(entry.placement.nodes):
            return "hint names a node the user excluded"
        if self._planned_nodes & set(entry.placement.nodes):
            return "hint names a node backfill keeps for another job"
        if rec is not None and (rec.hint_done or rec.hint_age >= self.hint_cycles):
            return "an earlier hint expired"
        return ""

    def decide(self, state: DaemonState, snapshot: Snapshot, plan: Plan, *, leave_order: bool = False,
               site_unknown: Collection[str] = frozenset()) -> Decision:
        """Changes that make Slurm follow ``plan``; ours on jobs the plan no longer covers are undone."""
        pending = _pending(snapshot)
        all_nodes = tuple(n.name for n in snapshot.nodes)
        # 22.05 shows nodes that backfill set aside for a higher-priority job as PLANNED: never steer there
        self._planned_nodes = frozenset(n.name for n in snapshot.nodes if "planned" in n.state.lower())
        out = Decision()
        planned: set[str] = set()
        main_pass = main_pass_jobs(plan)
        for e in plan.entries:
            st = pending.get(e.job_id)
            if st is None:
                continue
            planned.add(e.job_id)
            rec = state.jobs.get(e.job_id)
            site_rec = rec.fields.get(SITE) if rec is not None else None
            if leave_order:
                want: int | None = _int(site_rec.original) if site_rec is not None else None
                kind: Kind = "release"
            else:
                want, kind = e.site_factor, "priority"
            if want is not None:
                differs = want != st.site_factor or (e.job_id in site_unknown and site_rec is not None)
                if differs and not (e.job_id in site_unknown and site_rec is None and want == 0):
                    out.changes.append(Change(e.job_id, SITE, want, kind))
            hint = self._hint(e, st, rec, all_nodes, main_pass)
            if hint is not None:
                out.changes.append(hint)
        for job_id, rec in state.jobs.items():
            st = pending.get(job_id)
            if st is None or job_id in planned:
                continue
            for name, fc in rec.fields.items():  # exempt/held/hands-off now: put ours back
                if not same(observed(st, name), fc.original):
                    out.changes.append(Change(job_id, name, fc.original, "release"))
        return out

    def _hint(self, e: PlanEntry, st: PendingState, rec: JobRecord | None, all_nodes: tuple[str, ...],
              main_pass: Collection[str]) -> Change | None:
        active = rec.hint_nodes if rec is not None and EXC in rec.fields else ()
        original = _nodes(rec.fields[EXC].original) if rec is not None and EXC in rec.fields else node_tuple(
            st.exc_nodes)
        if active and rec is not None and rec.hint_age >= self.hint_cycles:
            return Change(e.job_id, EXC, original, "expire")
        why_not = self.may_hint(st, e, rec, main_pass)
        want = tuple(sorted(e.placement.nodes)) if not why_not else ()
        if active and set(want) == set(active):
            return None
        if want:
            excluded = tuple(sorted(set(original) | (set(all_nodes) - set(want))))
            if not excluded or set(excluded) >= set(all_nodes):
                return None  # nothing to steer with / would exclude every node
            return Change(e.job_id, EXC, excluded, "hint", want)
        if active:
            return Change(e.job_id, EXC, original, "clear")
        return None

    def restore(self, state: DaemonState, snapshot: Snapshot,
                fates: Mapping[str, Fate] | None = None) -> Decision:
        """Every recorded field back to its original value: all fields of pending jobs; the SiteFactor of
        running ones (it returns with a requeued job; node lists cannot change on a running job, so
        those records are ``kept`` until the job ends or comes back). Records of jobs Slurm confirms
        are over (``fates``) are dropped; the rest are ``kept`` with the reason."""
        pending = _pending(snapshot)
        running = {r.job.id for r in snapshot.running}
        over = {j for j, f in (fates or {}).items() if f.over}
        out = Decision()
        for job_id in list(state.jobs):
            rec = state.jobs[job_id]
            rec.hint_done, rec.hint_age = False, 0  # a restored job starts afresh with a later daemon
            if job_id in pending:
                for name, fc in rec.fields.items():
                    out.changes.append(Change(job_id, name, fc.original, "restore"))
            elif job_id in running:
                if SITE in rec.fields:
                    out.changes.append(Change(job_id, SITE, rec.fields[SITE].original, "restore"))
                nodes = [FIELD_LABEL[n] for n in rec.fields if n != SITE]
                if nodes:
                    out.kept[job_id] = (f"running: its {'/'.join(nodes)} can change only while it is pending "
                                        "(it matters only if the job is requeued; the record is kept)")
            elif job_id in over:
                out.dropped.append(job_id)
                del state.jobs[job_id]
                continue
            else:
                fate = (fates or {}).get(job_id)
                out.unresolved[job_id] = (f"not in the queue read; Slurm says {fate.state or fate.kind}"
                                          if fate else "listed by Slurm but its record did not parse")
            if not rec.fields:
                del state.jobs[job_id]
        state.hands_off.clear()
        state.demoted_since.clear()
        return out

    # ---- 3. write-ahead and settlement -----------------------------------------------------------

    @staticmethod
    def begin(state: DaemonState, snapshot: Snapshot, decision: Decision, now: float) -> None:
        """Record intents before anything is sent (the cycle saves them before it writes)."""
        pending = _pending(snapshot)
        for ch in decision.changes:
            st = pending.get(ch.job_id)
            rec = state.jobs.setdefault(ch.job_id, JobRecord())
            fc = rec.fields.get(ch.field)
            # a running job's SiteFactor is not readable (sprio lists pending jobs only): the value we
            # set last stands for the current one
            cur = observed(st, ch.field) if st is not None else (fc.value if fc is not None else ch.value)
            if fc is None:
                rec.fields[ch.field] = FieldChange(cur, ch.value, cur, now, now, False)
            else:
                fc.previous, fc.value, fc.last_set, fc.confirmed = cur, ch.value, now, False
            if ch.kind == "hint":
                rec.hint_nodes = ch.nodes
            elif ch.field == EXC:
                rec.hint_nodes = ()
                if ch.kind == "expire":
                    rec.hint_done = True

    @staticmethod
    def settle(state: DaemonState, decision: Decision, result: ApplyResult) -> Settled:
        """Confirm what Slurm applied, roll back what was not sent, leave the uncertain for the next
        read. Applied restores drop the record."""
        by_job = result.by_job()
        out = Settled()
        for ch in decision.changes:
            res = by_job.get(ch.job_id)
            rec = state.jobs.get(ch.job_id)
            fc = rec.fields.get(ch.field) if rec is not None else None
            status = res.status if res is not None else UpdateStatus.REFUSED
            if status in (UpdateStatus.APPLIED, UpdateStatus.UNCHANGED):
                if fc is not None:
                    fc.confirmed, fc.previous = True, fc.value
                if status is UpdateStatus.APPLIED:
                    out.changed_jobs.add(ch.job_id)
                    out.priority_applied += ch.field == SITE and ch.kind == "priority"
                    out.hints_set += ch.kind == "hint"
                    out.hints_cleared += ch.field == EXC and ch.kind in ("clear", "release", "restore")
                    out.hints_expired += ch.kind == "expire"
                    out.restored += ch.kind == "restore"
            elif status in (UpdateStatus.REFUSED, UpdateStatus.PLANNED):
                if fc is not None:
                    fc.value, fc.confirmed = fc.previous, True
                if res is not None and status is UpdateStatus.REFUSED:
                    out.refused[ch.job_id] = res.reason
            elif res is not None:
                (out.failed if status is UpdateStatus.FAILED else out.unknown)[ch.job_id] = res.reason
            if rec is not None and fc is not None and fc.confirmed and same(fc.value, fc.original):
                del rec.fields[ch.field]
                if ch.field == EXC:
                    rec.hint_nodes = ()
            if rec is not None and rec.empty():
                state.jobs.pop(ch.job_id, None)
        return out


def _nodes(v: Value) -> tuple[str, ...]:
    return v if isinstance(v, tuple) else ()


def _int(v: Value) -> int:
    return v if isinstance(v, int) else 0

