"""A simulated Slurm for ``--backend sim``: the daemon's own loop against the project's simulator.

Users without a cluster (or a test without root) get the full daemon: reads are Snapshots of the
simulated cluster with Slurm-like multifactor priorities plus the SiteFactors the daemon set; writes
go through the real writer's validation (``slurm.writer.prepare``, so refusals are identical) and then
set SiteFactors and node restrictions in the simulator; every cycle advances the simulated clock by
``interval``. Job ids are renumbered 1..N (Slurm ids are numbers); the trace's own ids are shown as
display names.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from rltune_daemon.domain import PendingState, Snapshot, Workload
from rltune_daemon.domain.arrays import I64
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.policies.base import QueueView
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.sim.config import SimConfig
from rltune_daemon.sim.controller import Controller, tiered_order
from rltune_daemon.sim.engine import Simulator, drive, simulate
from rltune_daemon.sim.metrics import summarize
from rltune_daemon.slurm.assemble import ReadInfo
from rltune_daemon.slurm.formats import compress_hostlist
from rltune_daemon.slurm.integrity import Fate
from rltune_daemon.slurm.writer import ApplyResult, JobResult, JobUpdate, UpdateStatus, prepare


class _SlurmOrder(Controller):
    """Slurm's order in the simulator: PriorityTier, then multifactor + SiteFactor."""

    name = "slurm"

    def __init__(self, owner: SimSlurm) -> None:
        self.owner = owner

    def order(self, sim: Simulator, pending: I64) -> I64:
        return self.owner.order(pending)

    def on_start(self, sim: Simulator, row: int) -> None:
        self.owner.started(row)


class SimSlurm:
    """The simulated controller (see module docstring)."""

    def __init__(self, workload: Workload, config: SimConfig | None = None,
                 base: Multifactor | None = None) -> None:
        jobs = tuple(dataclasses.replace(j, id=str(i + 1)) for i, j in enumerate(workload.jobs))
        self.names = {str(i + 1): j.id for i, j in enumerate(workload.jobs)}
        self.original = workload
        self.workload = Workload(workload.name, workload.cluster, jobs, workload.estimates,
                                 dict(workload.meta))
        self.config = config or SimConfig()
        self.base = base or Multifactor()
        self.sim = Simulator(self.workload, _SlurmOrder(self), self.config)
        self.site: dict[int, int] = {}
        self.exc: dict[int, tuple[str, ...]] = {}
        self.node_index = {n: i for i, n in enumerate(self.sim.cl.names)}
        self._last: ReadInfo | None = None
        self._reported = np.zeros(len(jobs), dtype=np.bool_)  # finished runs already handed out
        if jobs:
            self.sim.now = float(jobs[0].submit)
            self.advance_to(self.sim.now)

    # ---- Slurm's side --------------------------------------------------------------------------

    def base_priority(self, rows: I64) -> I64:
        sim = self.sim
        view = QueueView(sim.table, rows, sim.now, sim.cl, sim.usage)
        return self.base.priority(view).astype(np.int64)

    def order(self, pending: I64) -> I64:
        prio = self.base_priority(pending)
        site = np.fromiter((self.site.get(int(r), 0) for r in pending), dtype=np.int64, count=len(pending))
        return tiered_order(self.sim, pending, -(np.maximum(prio + site, 1)).astype(np.float64))

    def started(self, row: int) -> None:
        self.site.pop(row, None)
        self.exc.pop(row, None)

    def _pass(self) -> None:
        """One scheduling pass, as slurmctld runs after a job update."""
        drive(self.sim.schedule_pass())

    def advance_to(self, t: float) -> None:
        """Process arrivals and finishes up to time ``t`` (the engine's own event loop, paused at ``t``)."""
        drive(self.sim.advance(until=t))
        self.sim.now = max(self.sim.now, t)

    def advance(self, seconds: float) -> None:
        """Move the clock by ``seconds``; an idle cluster jumps to the next arrival."""
        target = self.sim.now + seconds
        nxt = self.sim.next_event()
        if self.sim.idle() and math.isfinite(nxt):
            target = max(target, nxt)
        self.advance_to(target)

    def done(self) -> bool:
        return self.sim.idle() and math.isinf(self.sim.next_event())

    # ---- the daemon's side -----------------------------------------------------------------------

    @property
    def last(self) -> ReadInfo | None:
        return self._last

    def read(self) -> Snapshot:
        rows = self.sim.pending_rows()
        prio = self.base_priority(rows)
        order = {int(r): k for k, r in enumerate(self.order(rows))}
        states = []
        for r, p in zip(rows, prio, strict=True):
            row = int(r)
            site = self.site.get(row, 0)
            states.append(PendingState(
                priority=int(max(p + site, 1)), site_factor=site,
                reason="Resources" if order.get(row) == 0 else "Priority",
                exc_nodes=compress_hostlist(list(self.exc[row])) if row in self.exc else "",
            ))
        snap = self.sim.snapshot(states)
        info = ReadInfo()
        info.display_ids = {j.id: self.names[j.id] for j in snap.pending}
        info.queue = self.queue()
        self._last = info
        return snap

    def queue(self) -> frozenset[tuple[str, str]]:
        """``(job id, state)`` of pending and running jobs, as the Slurm reader's ``queue_signature``."""
        ids = self.sim.table.ids
        return frozenset([(ids[int(r)], "PENDING") for r in self.sim.pending_rows()]
                         + [(ids[row], "RUNNING") for row in self.sim.allocs])

    def confirm(self, job_ids: Collection[str]) -> dict[str, Fate]:
        """Finished jobs are ``ended``; pending and running ones ``alive``; ids it never had ``gone``."""
        sim = self.sim
        running = set(sim.allocs)
        pending = {int(r) for r in sim.pending_rows()}
        out: dict[str, Fate] = {}
        for job_id in job_ids:
            row = int(job_id) - 1 if job_id.isdigit() else -1
            if not 0 <= row < len(sim.table.ids):
                out[job_id] = Fate("gone")
            elif not np.isnan(sim.end[row]):
                out[job_id] = Fate("ended", "COMPLETED")
            elif row in running or row in pending:
                out[job_id] = Fate("alive", "RUNNING" if row in running else "PENDING")
            else:
                out[job_id] = Fate("other", "NOT_SUBMITTED")
        return out

    def apply(self, snapshot: Snapshot, updates: Iterable[JobUpdate], *,
              site_factor_unknown: Collection[str] = frozenset(), dry_run: bool = False,
              restore: bool = False) -> ApplyResult:
        ups = {u.job_id: u for u in updates}
        prep = prepare(snapshot, ups.values(), site_factor_unknown=site_factor_unknown, restore=restore)
        if dry_run:
            planned = tuple(JobResult(j, UpdateStatus.PLANNED, "dry run", ln) for j, ln in prep.lines)
            return ApplyResult(prep.decided + planned, dry_run=True)
        done = []
        for job_id, line in prep.lines:
            self._set(int(job_id) - 1, ups[job_id])
            done.append(JobResult(job_id, UpdateStatus.APPLIED, "", line))
        if done:
            self._pass()  # Slurm schedules again after a job update
        return ApplyResult(prep.decided + tuple(done), 0 if done else None)

    def _set(self, row: int, u: JobUpdate) -> None:
        if u.site_factor is not None:
            if u.site_factor:
                self.site[row] = u.site_factor
            else:
                self.site.pop(row, None)
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
        return FinishedRuns(tuple(t.ids[r] for r in rows), tuple(t.users[t.user[r]] for r in rows),
                            t.gpus[rows].astype(np.int64), sim.end[rows] - sim.start[rows], sim.end[rows])

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
