"""A simulated Slurm: the daemon's own backend against the project's simulator.

``SimulatedSlurm`` is Slurm's side (priorities with the daemon's SiteFactors, node restrictions, reads,
validated writes) over a Simulator; ``SimSlurm`` adds the clock for ``--backend sim``. Offline daemon
mode (``sim.daemon``) runs the same ``SimulatedSlurm`` under the engine's ticks, so both run one
planner -> applier -> writer path. Job ids are renumbered 1..N (Slurm ids are numbers); the trace's own
ids are shown as display names.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Iterable
from typing import Any

import numpy as np

from rltune_daemon.domain import PendingState, Snapshot, Workload
from rltune_daemon.domain.arrays import I64
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.updates import ApplyResult, Fate, JobResult, JobUpdate, ReadInfo, UpdateStatus
from rltune_daemon.formats.slurm import compress_hostlist
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.sim.config import SimConfig
from rltune_daemon.sim.controller import Controller, tiered_order
from rltune_daemon.sim.engine import Simulator, drive, simulate
from rltune_daemon.sim.metrics import summarize
from rltune_daemon.sim.view import JobState, SimView
from rltune_daemon.slurm.writer import prepare

# what Slurm answers about a job the read did not list, by the job's state in the simulator
_FATES: dict[JobState, Fate] = {
    "ended": Fate("ended", "COMPLETED"), "running": Fate("alive", "RUNNING"),
    "pending": Fate("alive", "PENDING"), "unsubmitted": Fate("other", "NOT_SUBMITTED"),
}


class SimulatedSlurm:
    """Slurm's side of a simulated cluster, as the daemon's backend sees it: each pending job's
    priority is multifactor + the SiteFactor the daemon set, its ExcNodeList restricts where it may
    start, reads are Snapshots and writes go through the real writer's validation. It reads and steers
    a ``Simulator`` it is bound to (``bind``) and keeps no clock of its own: whoever owns the Simulator
    moves time (``SimSlurm`` for ``--backend sim``, the engine's ticks in offline daemon mode).

    Job ids are the row numbers 1..N (Slurm ids are digits; a trace's own ids are display names)."""

    def __init__(self, base: Multifactor | None = None, *, display: bool = True) -> None:
        self.base = base or Multifactor()
        self.display = display  # fill ReadInfo.display_ids (the dry-run table shows the trace's ids)
        self.site: dict[int, int] = {}
        self.exc: dict[int, tuple[str, ...]] = {}
        self._sim: SimView | None = None
        self._last: ReadInfo | None = None

    def bind(self, sim: SimView, names: dict[str, str] | None = None) -> None:
        """Steer ``sim`` (once; later calls with the same simulator are free). ``names``: display name
        per job id (default the workload's own ids)."""
        if sim is self._sim:
            return
        self._sim = sim
        jobs = sim.workload.jobs
        numbered = all(j.id == str(i + 1) for i, j in enumerate(jobs))
        self.jobs = jobs if numbered else tuple(dataclasses.replace(j, id=str(i + 1))
                                                for i, j in enumerate(jobs))
        self.names = names if names is not None else {str(i + 1): j.id for i, j in enumerate(jobs)}
        self.node_index = {n: i for i, n in enumerate(sim.node_names)}
        self._reported = np.zeros(len(jobs), dtype=np.bool_)  # finished runs already handed out

    @property
    def sim(self) -> SimView:
        if self._sim is None:
            raise RuntimeError("SimulatedSlurm.bind(simulator) first")
        return self._sim

    # ---- Slurm's side --------------------------------------------------------------------------

    def priority(self, rows: I64) -> tuple[I64, I64]:
        """(multifactor + SiteFactor, at least 1 as Slurm floors it; the SiteFactors) of ``rows``."""
        sim = self.sim
        base = self.base.priority(sim.queue_view(rows)).astype(np.int64)
        site = np.fromiter((self.site.get(int(r), 0) for r in rows), dtype=np.int64, count=len(rows))
        return np.maximum(base + site, 1), site

    def order(self, pending: I64) -> I64:
        """Slurm's start order: PriorityTier, then priority."""
        return tiered_order(self.sim, pending, -self.priority(pending)[0].astype(np.float64))

    def started(self, row: int) -> None:
        self.site.pop(row, None)
        self.exc.pop(row, None)

    # ---- the daemon's side -----------------------------------------------------------------------

    @property
    def last(self) -> ReadInfo | None:
        return self._last

    def read(self) -> Snapshot:
        sim = self.sim
        rows = sim.pending_rows()
        prio, site = self.priority(rows)
        first = int(tiered_order(sim, rows, -prio.astype(np.float64))[0]) if len(rows) else -1
        states = [PendingState(
            priority=int(p), site_factor=int(s), reason="Resources" if int(r) == first else "Priority",
            exc_nodes=compress_hostlist(list(self.exc[int(r)])) if int(r) in self.exc else "",
        ) for r, p, s in zip(rows, prio, site, strict=True)]
        snap = sim.snapshot(states, self.jobs)
        info = ReadInfo()
        if self.display:
            info.display_ids = {j.id: self.names[j.id] for j in snap.pending}
            info.queue = self.queue()
        self._last = info
        return snap

    def queue(self) -> frozenset[tuple[str, str]]:
        """``(job id, state)`` of pending and running jobs, as the Slurm reader's ``queue_signature``."""
        ids = self.jobs
        return frozenset([(ids[int(r)].id, "PENDING") for r in self.sim.pending_rows()]
                         + [(ids[row].id, "RUNNING") for row in self.sim.running_rows()])

    def confirm(self, job_ids: Collection[str]) -> dict[str, Fate]:
        """Finished jobs are ``ended``; pending and running ones ``alive``; ids it never had ``gone``."""
        sim = self.sim
        out: dict[str, Fate] = {}
        for job_id in job_ids:
            row = int(job_id) - 1 if job_id.isdigit() else -1
            if not 0 <= row < len(sim.table.ids):
                out[job_id] = Fate("gone")
            else:
                out[job_id] = _FATES[sim.state_of(row)]
        return out

    def apply(self, snapshot: Snapshot, updates: Iterable[JobUpdate], *,
              site_factor_unknown: Collection[str] = frozenset(), dry_run: bool = False,
              restore: bool = False, should_stop: Callable[[], bool] | None = None) -> ApplyResult:
        """Validate as the Slurm writer does, then set (at once: nothing to stop between batches). The
        scheduling pass Slurm runs after a job update is the one the clock's owner runs right after the
        daemon's cycle (the engine's tick); a cycle that changed nothing gets none, as the cluster
        without the daemon would not."""
        ups = {u.job_id: u for u in updates}
        prep = prepare(snapshot, ups.values(), site_factor_unknown=site_factor_unknown, restore=restore)
        if dry_run:
            planned = tuple(JobResult(j, UpdateStatus.PLANNED, "dry run", ln) for j, ln in prep.lines)
            return ApplyResult(prep.decided + planned, dry_run=True)
        done = []
        for job_id, line in prep.lines:
            self._set(int(job_id) - 1, ups[job_id])
            done.append(JobResult(job_id, UpdateStatus.APPLIED, "", line))
        return ApplyResult(prep.decided + tuple(done), 0 if done else None)

    def _set(self, row: int, u: JobUpdate) -> None:
        if u.site_factor is not None and u.site_factor != self.site.get(row, 0):
            if u.site_factor:
                self.site[row] = u.site_factor
            else:
                self.site.pop(row, None)
            self.sim.reprioritised()
        if u.exc_nodes is not None:
            if u.exc_nodes:
                self.exc[row] = tuple(u.exc_nodes)
            else:
                self.exc.pop(row, None)
        allowed = set(self.node_index)
        if u.req_nodes:
            allowed &= set(u.req_nodes)
        allowed -= set(self.exc.get(row, ()))
        if allowed == set(self.node_index):
            self.sim.clear_hint(row)
        else:
            self.sim.set_hint(row, np.array(sorted(self.node_index[n] for n in allowed), dtype=np.int64))

    def finished_runs(self, rewind: bool = False) -> FinishedRuns:
        """Jobs finished since the previous call (``rewind``: every finished job), as sacct gives
        them on a cluster: runtime and end as the simulator ran them."""
        sim = self.sim
        if rewind:
            self._reported[:] = False
        rows = np.flatnonzero(~np.isnan(sim.end) & ~self._reported).astype(np.int64)
        self._reported[rows] = True
        t = sim.table
        return FinishedRuns(tuple(self.jobs[r].id for r in rows), tuple(t.users[t.user[r]] for r in rows),
                            t.gpus[rows].astype(np.int64), sim.end[rows] - sim.start[rows], sim.end[rows])


class _SlurmOrder(Controller):
    """Slurm's order in the simulator, and its periodic scheduling pass every ``tick`` seconds: the
    moments the daemon's queue checks and cycles happen (``SimSlurm.advance``)."""

    name = "slurm"

    def __init__(self, owner: SimulatedSlurm, tick: float) -> None:
        self.owner = owner
        self.interval = tick

    def order(self, sim: SimView, pending: I64) -> I64:
        return self.owner.order(pending)

    def on_start(self, sim: SimView, row: int) -> None:
        self.owner.started(row)


class SimSlurm(SimulatedSlurm):
    """The simulated controller of ``--backend sim``: a ``SimulatedSlurm`` that owns its Simulator and
    its clock. The clock moves from one queue check to the next on the engine's own tick grid (every
    ``tick`` seconds: the daemon's ``react``, else its ``interval``; idle stretches skipped), and the
    daemon's cycle at a tick sees the queue before the jobs that arrive or end at that instant, exactly
    as offline daemon mode does (``sim.daemon``), so both give the same schedule."""

    def __init__(self, workload: Workload, config: SimConfig | None = None,
                 base: Multifactor | None = None, tick: float = 60.0) -> None:
        super().__init__(base)
        jobs = tuple(dataclasses.replace(j, id=str(i + 1)) for i, j in enumerate(workload.jobs))
        self.original = workload
        self.workload = Workload(workload.name, workload.cluster, jobs, workload.estimates,
                                 dict(workload.meta))
        self.config = config or SimConfig()
        self.engine = Simulator(self.workload, _SlurmOrder(self, tick), self.config)  # owns the clock
        self.bind(self.engine.view, {str(i + 1): j.id for i, j in enumerate(workload.jobs)})
        if jobs:
            self.engine.now = float(self.engine.next_tick)  # the first cycle: before the first arrival

    def advance(self) -> float:
        """To the next queue check: the scheduling pass of the tick at ``now`` (it follows the daemon's
        cycle there, as after a job update), the events up to the next tick, then that tick's moment.
        Returns the simulated seconds moved."""
        sim = self.engine
        t0 = sim.now
        drive(sim.advance(until=t0))
        nxt = sim.next_tick
        if math.isinf(nxt):
            drive(sim.advance())
            return sim.now - t0
        drive(sim.advance(until=float(np.nextafter(nxt, -math.inf))))
        sim.now = nxt
        return nxt - t0

    def skip(self, seconds: float) -> None:
        """Check by check (no daemon cycle) until ``seconds`` have passed: a busier starting point."""
        until = self.sim.now + seconds
        while self.sim.now < until and not self.done():
            self.advance()

    def skip_to_pending(self) -> None:
        """Check by check (no daemon cycle) to the first check whose read lists a pending job (or the
        end): the clock starts before the first arrival, whose check sees an empty queue."""
        while not len(self.sim.pending_rows()) and not self.done():
            self.advance()

    def done(self) -> bool:
        return self.engine.idle() and math.isinf(self.engine.next_event())

    # ---- results ---------------------------------------------------------------------------------

    def summary(self, baseline: bool = True) -> dict[str, Any]:
        """Metrics of the jobs that ran, and (``baseline``) the same workload under Slurm's multifactor
        order alone, for the "did it cut queue wait" question."""
        sim = self.sim
        # jobs still running count up to now (their end is not known yet), so a summary taken mid-run
        # reports utilisation so far instead of NaN/0
        end = np.where(np.isnan(sim.end) & ~np.isnan(sim.start), sim.now, sim.end)
        out: dict[str, Any] = {"clock": sim.now, "finished": int(sim.stats["finished"]),
                               "daemon": summarize(sim.table.submit, sim.start, end,
                                                   sim.table.gpus.astype(np.float64),
                                                   self.workload.cluster.total_gpus)}
        if baseline:
            out["multifactor_alone"] = simulate(self.workload, Multifactor(), self.config).metrics
        return out
