"""The ``--dry-run`` table: what the daemon would change, job by job, before it is trusted to do so.

Columns: rank, job, user, partition, current priority, proposed priority, placement, reason. Jobs the
planner leaves alone follow with their reason. A fallback policy is announced in a banner first, so
nobody mistakes a heuristic's plan for the model's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rltune_daemon.core.applier import EXC, SITE, Decision
from rltune_daemon.domain import PlacementKind, Plan, PlanEntry, Snapshot

HEADERS = ("rank", "job", "user", "partition", "priority", "proposed", "placement", "reason")


def _placement(e: PlanEntry, decision: Decision) -> str:
    for ch in decision.changes:
        if ch.job_id != e.job_id or ch.field != EXC:
            continue
        if ch.kind == "hint":
            return f"-> {','.join(ch.nodes)} ({e.placement.kind.value})"
        return "hint expired" if ch.kind == "expire" else "hint removed"
    if e.placement.is_hint:
        return f"({','.join(e.placement.nodes)}: not hinted)"
    if e.starts_now:
        return "starts now" if e.placement.kind is PlacementKind.DEFAULT else e.placement.kind.value
    return "-"


def rows(plan: Plan, snapshot: Snapshot, decision: Decision,
         display: Mapping[str, str] | None = None) -> list[tuple[str, ...]]:
    """Table rows (strings), planned jobs first in plan order, then the ones left alone."""
    names = display or {}
    jobs = {j.id: (j, s) for j, s in zip(snapshot.pending, snapshot.pending_state, strict=True)}
    site = {c.job_id: int(c.value) for c in decision.changes if c.field == SITE and isinstance(c.value, int)}
    out: list[tuple[str, ...]] = []
    for e in plan.entries:
        job, st = jobs[e.job_id]
        base = st.priority - st.site_factor
        proposed = base + site.get(e.job_id, st.site_factor)
        mark = "" if proposed == st.priority else " *"
        out.append((str(e.rank), names.get(e.job_id, e.job_id), job.user, job.partition, str(st.priority),
                    f"{proposed}{mark}", _placement(e, decision), e.reason))
    for job_id, why in plan.skipped:
        if job_id not in jobs:
            continue
        job, st = jobs[job_id]
        out.append(("-", names.get(job_id, job_id), job.user, job.partition, str(st.priority),
                    str(st.priority), "-", f"left alone: {why}"))
    return out


def render(table: Sequence[tuple[str, ...]], headers: Sequence[str] = HEADERS) -> str:
    widths = [len(h) for h in headers]
    for r in table:
        widths = [max(w, len(c)) for w, c in zip(widths, r, strict=True)]

    def line(cells: Sequence[str]) -> str:
        last = len(cells) - 1
        return "  ".join(c if i == last else c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in table)])


def report(plan: Plan, snapshot: Snapshot, decision: Decision, *, policy: str, fallback: str,
           display: Mapping[str, str] | None = None, writes: int = 0, history: str = "") -> str:
    """Banner + table + footer, as printed by ``rltune-daemon --dry-run``. ``history``: what a
    history-based policy (QSSF) learned from, or why it has nothing ("!" first: said as a warning)."""
    parts: list[str] = []
    if fallback:
        parts.append(f"!!! FALLBACK: {fallback} !!!")
    if history:
        parts.append(f"!!! {history[1:]} !!!" if history.startswith("!") else history)
    changed = len({c.job_id for c in decision.changes})
    later = (f", {decision.deferred} more in later cycles (slurm.max_updates_per_cycle)"
             if decision.deferred else "")
    parts.append(
        f"rltune-daemon dry run: policy {policy}, {len(snapshot.pending)} pending, {len(plan.entries)} "
        f"planned, {len(plan.skipped)} left alone, {changed} job(s) would change this cycle{later} "
        f"({writes} update line(s)); nothing was written to Slurm"
    )
    table = rows(plan, snapshot, decision, display)
    parts.append(render(table) if table else "(no pending jobs)")
    parts.append("* = proposed priority differs from the current one (set through SiteFactor)")
    return "\n".join(parts)
