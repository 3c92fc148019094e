"""The daemon's cycle, written once: read -> confirm -> learn history -> steer -> begin/save/apply/settle.

The live service (``service.loop``) and the simulator's daemon mode (``sim.daemon``) both call
``run_cycle``; what differs between them is attached, not copied: the ``Cluster`` (Slurm through the CLI,
or the simulated Slurm) and an ``Observer`` that logs, counts, saves the undo record and keeps the
watchdog fed (live), or does nothing and lets every failure surface (``Strict``, the simulator), so an
evaluation measures exactly the decisions a real cluster gets.

Order, each step there for safety: nothing is written after a read that failed or looks incomplete (a
job the daemon changed that the read missed but Slurm still lists makes ``Cluster.confirm`` raise);
the record of every field about to change is saved before Slurm is asked (``Observer.save`` raising
stops the cycle before any write); a write whose outcome is unknown stays unconfirmed in the record
and the next read settles it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

from rltune_daemon.core.applier import Applier, Decision, Settled
from rltune_daemon.core.record import DaemonState
from rltune_daemon.core.steer import Step, steer, unlisted
from rltune_daemon.domain import Plan, Snapshot
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.updates import ApplyResult, Fate, JobUpdate, ReadInfo
from rltune_daemon.policies.base import Policy
from rltune_daemon.spans import span

Stage = Literal["read", "history", "plan", "apply", "save"]
Where = Literal["read", "history", "plan", "state", "apply"]
Outcome = Literal["applied", "dry_run", "skipped"]


class Cluster(Protocol):
    """What one cycle needs of a cluster. Reads and writes raise on trouble (the live backend's
    ``SlurmError``s); ``confirm`` raises when a job the read did not list is still pending or running
    (the read missed it, so nothing may be written)."""

    @property
    def last(self) -> ReadInfo | None: ...

    def read(self) -> Snapshot: ...

    def confirm(self, job_ids: Collection[str]) -> dict[str, Fate]: ...

    def apply(self, snapshot: Snapshot, updates: Iterable[JobUpdate], *,
              site_factor_unknown: Collection[str] = frozenset(), dry_run: bool = False,
              restore: bool = False, should_stop: Callable[[], bool] | None = None) -> ApplyResult: ...

    def finished_runs(self, rewind: bool = False) -> FinishedRuns | None: ...


class Observer:
    """Hooks of one cycle; every one a no-op here. ``failed`` re-raises: a simulation must not hide a
    failure the live service would log and survive (``service.loop`` overrides it)."""

    def stage(self, name: Stage, seconds: float) -> None:
        """A stage ended: ``read`` (read + confirm), ``history`` (finished runs for a history-based
        policy), ``plan`` (settle the record, plan, choose the writes), ``save`` (each save of the undo
        record), ``apply`` (the writes, dry-run included). A stage that raised is not reported."""

    def failed(self, err: Exception, where: Where) -> None:
        raise err

    def listed(self, info: ReadInfo) -> None:
        """The read returned (before anything is confirmed): its records that did not parse."""

    def confirmed(self, snap: Snapshot, info: ReadInfo) -> None:
        """The read is complete and consistent: the queue the plan will see."""

    def learned(self, policy: Policy, runs: FinishedRuns, rewound: bool) -> None:
        """``policy`` learned ``runs`` (``rewound``: the whole look-back, for a new policy object)."""

    def note(self, text: str) -> None:
        """A note from settling the undo record against the read."""

    def planned(self, step: Step) -> None: ...

    def save(self, state: DaemonState) -> None:
        """Make the undo record durable; raising stops the cycle before Slurm is written."""

    def dry_run(self, step: Step, snap: Snapshot, info: ReadInfo, result: ApplyResult) -> None: ...

    def applied(self, step: Step, settled: Settled, result: ApplyResult) -> None: ...


class Strict(Observer):
    """The simulator's observer: nothing to log or save; any failure raises."""


@dataclass
class HistoryFeed:
    """Feeds finished runs to a history-based policy (QSSF), once per policy object: a new object (a
    model replaced by its base policy) starts again from the whole look-back."""

    fed: Policy | None = field(default=None, repr=False)

    def learn(self, cluster: Cluster, policy: Policy) -> tuple[FinishedRuns | None, bool]:
        """The runs learned (None: none were due) and whether they were the whole look-back."""
        if not policy.learns_history:
            return None, False
        rewind = policy is not self.fed
        self.fed = policy
        runs = cluster.finished_runs(rewind)
        if runs is not None:
            policy.learn_runs(runs)
        return runs, rewind


@dataclass
class Core:
    """What lasts from one cycle to the next: the applier, the undo record, the history fed so far,
    and how many jobs' updates one cycle may send."""

    applier: Applier
    state: DaemonState
    max_updates: int
    history: HistoryFeed = field(default_factory=HistoryFeed)


def confirm_unlisted(cluster: Cluster, state: DaemonState, snap: Snapshot, info: ReadInfo) -> dict[str, Fate]:
    """What the cluster says of the jobs the undo record names that ``snap`` did not list: only its word
    that a job is over lets a record go (a cycle and a restore both ask)."""
    missing = unlisted(state, snap, info.unparsed)
    return cluster.confirm(missing) if missing else {}


@contextlib.contextmanager
def _stage(obs: Observer, name: Stage) -> Iterator[None]:
    """Time a stage for the observer, and as a span for a benchmark's finer split (``spans``)."""
    t0 = time.monotonic()
    with span(name):
        yield
    obs.stage(name, time.monotonic() - t0)


def run_cycle(cluster: Cluster, core: Core, policy: Policy, planner: Callable[[Snapshot], Plan],
              obs: Observer, *, now: Callable[[], float], leave_order: bool = False, dry_run: bool = False,
              should_stop: Callable[[], bool] | None = None) -> Outcome:
    """One cycle (module docstring). ``policy``: whose history is fed; ``planner``: its plan of a
    snapshot; ``now``: the clock the record's timestamps use (wall time live, simulated time offline).
    Returns what the cycle did; every failure goes to ``obs.failed`` and skips the rest."""
    state, applier = core.state, core.applier
    try:
        with _stage(obs, "read"):
            snap = cluster.read()
            info = cluster.last or ReadInfo()
            obs.listed(info)
            fates = confirm_unlisted(cluster, state, snap, info)
    except Exception as err:
        obs.failed(err, "read")
        return "skipped"
    obs.confirmed(snap, info)
    try:
        with _stage(obs, "history"):
            runs, rewound = core.history.learn(cluster, policy)
    except Exception as err:  # without runs a history policy still orders jobs: not a skipped cycle
        obs.failed(err, "history")
    else:
        if runs is not None:
            obs.learned(policy, runs, rewound)
    try:
        with _stage(obs, "plan"):
            step = steer(applier, state, snap, planner, site_unknown=info.site_factor_unknown, fates=fates,
                         leave_order=leave_order, max_updates=core.max_updates, on_note=obs.note)
    except Exception as err:
        obs.failed(err, "plan")
        return "skipped"
    obs.planned(step)
    decision: Decision = step.decision
    updates = decision.updates()
    unknown = info.site_factor_unknown
    if dry_run:
        with _stage(obs, "apply"):
            result = cluster.apply(snap, updates, site_factor_unknown=unknown, dry_run=True)
        obs.dry_run(step, snap, info, result)
        return "dry_run"
    if decision.changes:
        applier.begin(state, snap, decision, now())
        if not _save(obs, state):  # write-ahead: originals are on disk before Slurm changes
            return "skipped"
        try:
            with _stage(obs, "apply"):
                result = cluster.apply(snap, updates, site_factor_unknown=unknown, should_stop=should_stop)
        except Exception as err:
            obs.failed(err, "apply")  # intents stay unconfirmed; the next read settles them
            _save(obs, state)
            return "skipped"
        obs.applied(step, applier.settle(state, decision, result), result)
    return "applied" if _save(obs, state) else "skipped"


def _save(obs: Observer, state: DaemonState) -> bool:
    try:
        with _stage(obs, "save"):
            obs.save(state)
    except Exception as err:
        obs.failed(err, "state")
        return False
    return True
