"""``rltune-daemon --backend sim``: the live service's ``Backend`` on a simulated Slurm that owns its clock,
for users without a cluster. The service sees only the ``Backend`` protocol; the CLI builds this one."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from rltune_daemon.domain import Snapshot, Workload
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.updates import ApplyResult, Fate, JobUpdate, ReadInfo
from rltune_daemon.sim.slurm import SimSlurm


class SimBackend:
    """The simulated Slurm (``SimSlurm``) on the configured workload. ``once``: the clock
    starts at the first check with a pending job, so a single cycle (``--once``) has a queue to show.
    A full run keeps the start before the first arrival: its cycles, ``max_cycles`` and ``hours`` count
    from there, as offline daemon mode's do (``sim.daemon``)."""

    name = "sim"

    def __init__(self, workload: Workload, *, tick: float, speedup: float, hours: float = 0.0,
                 once: bool = False) -> None:
        self.slurm = SimSlurm(workload, tick=tick)
        if once:
            self.slurm.skip_to_pending()
        self.speedup = speedup
        self.workload = workload
        self.until = self.slurm.sim.now + hours * 3600.0 if hours else float("inf")

    @property
    def last(self) -> ReadInfo | None:
        return self.slurm.last

    def read(self) -> Snapshot:
        return self.slurm.read()

    def watch(self) -> frozenset[tuple[str, str]]:
        return self.slurm.queue()

    def confirm(self, job_ids: Collection[str]) -> dict[str, Fate]:
        return self.slurm.confirm(job_ids)

    def apply(self, snapshot: Snapshot, updates: Iterable[JobUpdate], *,
              site_factor_unknown: Collection[str] = frozenset(), dry_run: bool = False,
              restore: bool = False, should_stop: Callable[[], bool] | None = None) -> ApplyResult:
        return self.slurm.apply(snapshot, updates, site_factor_unknown=site_factor_unknown, dry_run=dry_run,
                                restore=restore, should_stop=should_stop)

    def calls(self) -> int:
        return 0

    def tick(self, interval: float) -> float:
        moved = self.slurm.advance()  # the simulated Slurm's own check grid (``tick`` above), as offline
        return moved / self.speedup if self.speedup > 0 else 0.0

    def clock(self) -> float:
        return self.slurm.sim.now

    def done(self) -> bool:
        return self.slurm.done() or self.slurm.sim.now >= self.until

    def summary(self) -> dict[str, Any]:
        return self.slurm.summary(baseline=self.slurm.done())

    def finished_runs(self, rewind: bool = False) -> FinishedRuns | None:
        return self.slurm.finished_runs(rewind)
