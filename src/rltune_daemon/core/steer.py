"""One decision of the daemon: settle the undo record against a read, plan, choose the writes.

``core.cycle.run_cycle`` calls it for the live daemon and for offline daemon mode alike, then writes with
``Applier.begin`` -> backend ``apply`` -> ``Applier.settle``, so a simulated evaluation measures the
decisions a real cluster gets, not an approximation of them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from rltune_daemon.core.applier import Applier, Decision
from rltune_daemon.core.record import DaemonState
from rltune_daemon.domain import Plan, Snapshot
from rltune_daemon.domain.updates import Fate
from rltune_daemon.gcpause import paused_gc

# A first cycle on a 10,000-job queue must not hold slurmctld's job lock for seconds (10,000 updates in
# one burst: a user's sbatch waited 0.5 s; a few hundred per batch: no visible delay). See slurm/pacing.py.
MAX_UPDATES_DEFAULT = 500


@dataclass
class Step:
    """What ``steer`` decided: the plan (as logged), the writes, notes from settling the record, and
    how many records Slurm's word let go."""

    plan: Plan
    decision: Decision
    notes: list[str]
    forgotten: int


def unlisted(state: DaemonState, snap: Snapshot, unparsed: Collection[str] = frozenset()) -> list[str]:
    """Jobs the undo record (or the hands-off list) names that the read did not list: only Slurm's
    word about them (``confirm``) may let their records go."""
    seen = {j.id for j in snap.pending} | {r.job.id for r in snap.running} | set(unparsed)
    return [j for j in (*state.jobs, *state.hands_off) if j not in seen]


def steer(applier: Applier, state: DaemonState, snap: Snapshot, planner: Callable[[Snapshot], Plan], *,
          site_unknown: Collection[str] = frozenset(), fates: Mapping[str, Fate] | None = None,
          leave_order: bool = False, max_updates: int, on_note: Callable[[str], None] | None = None
          ) -> Step:
    """``planner`` sees ``snap`` with hands-off jobs marked admin-owned; at most ``max_updates`` jobs'
    updates are chosen (the most urgent first, ``Decision.limit``). ``on_note`` hears each note of the
    settling as it is made, so a planner that fails later does not lose them."""
    with paused_gc():
        return _steer(applier, state, snap, planner, site_unknown, fates, leave_order, max_updates, on_note)


def _steer(applier: Applier, state: DaemonState, snap: Snapshot, planner: Callable[[Snapshot], Plan],
           site_unknown: Collection[str], fates: Mapping[str, Fate] | None, leave_order: bool,
           max_updates: int, on_note: Callable[[str], None] | None) -> Step:
    before = len(state.jobs)
    notes = applier.reconcile(state, snap, site_unknown, fates)
    for note in notes:
        if on_note is not None:
            on_note(note)
    forgotten = before - len(state.jobs)
    plan = applier.relabel(planner(applier.planning_snapshot(state, snap)), state)
    decision = applier.decide(state, snap, plan, leave_order=leave_order,
                              site_unknown=site_unknown).limit(max_updates)
    return Step(plan, decision, notes, forgotten)
