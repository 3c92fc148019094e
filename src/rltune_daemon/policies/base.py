"""The policy interface: score pending jobs, lower first (the convention of paper Table 5)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, ClusterArrays, JobTable, places
from rltune_daemon.domain.history import FinishedRuns, RunHistory


class FairShareSource(Protocol):
    """Per-job fair-share factors in [0, 1] (Slurm's 2^(-usage/shares)); the simulator tracks usage,
    a live Slurm computes it itself (and the daemon then reads Slurm's own priority)."""

    def factors(self, users: I64, now: float) -> F64: ...


@dataclass(frozen=True)
class QueueView:
    """What a policy may look at. ``idx`` selects the pending rows of ``table``. ``now`` and
    ``table.submit`` share one clock (trace-relative seconds in the simulator, epoch in the daemon)."""

    table: JobTable
    idx: I64
    now: float
    cluster: ClusterArrays | None = None
    fairshare: FairShareSource | None = None
    history: RunHistory | None = None  # finished runs, for the ``hist_time`` feature (None: requested time)

    @property
    def wait(self) -> F64:
        """Seconds each pending job has waited since submit (never negative)."""
        return np.maximum(self.now - self.table.submit[self.idx], 0.0)

    @property
    def requested(self) -> F64:
        """Requested time limit (what SJF and friends see; never the true runtime), at least 1 s."""
        return np.maximum(self.table.time_limit[self.idx], 1.0)

    @property
    def age_places(self) -> I64:
        """Each pending job's place in submit order (0 = oldest, ties by row): the queue-position
        feature and the learned policy's age chunks both read it."""
        return places(np.lexsort((self.idx, self.table.submit[self.idx])))

    @property
    def size(self) -> F64:
        """Requested GPUs (processors on CPU clusters), at least 1 so formulas stay finite."""
        return np.maximum(self.table.gpus[self.idx], 1).astype(np.float64)


class Policy(ABC):
    """A priority function. ``static`` policies score a job the same whatever the time or cluster
    state, so the simulator may keep their order between decisions instead of re-sorting."""

    name: ClassVar[str]
    static: ClassVar[bool] = False
    learns_history: bool = False
    """True when scores depend on finished runs: the daemon then feeds it ``learn_runs`` from sacct."""

    @property
    def runs_learned(self) -> int:
        """Finished runs learned so far (history-based policies)."""
        return 0

    @abstractmethod
    def scores(self, view: QueueView) -> F64:
        """One score per pending job (``view.idx`` order); lower is scheduled first."""

    def observe_finish(self, table: JobTable, row: int, runtime: float) -> None:  # noqa: B027
        """Called when a job completes (history-based policies learn here)."""

    def fit_history(self, table: JobTable) -> None:
        """Learn from finished jobs before a run (e.g. the training split for QSSF)."""
        self.learn_runs(FinishedRuns.from_table(table))

    def learn_runs(self, runs: FinishedRuns) -> None:  # noqa: B027
        """Learn from finished runs, oldest end first (a live cluster's sacct, a trace's history)."""

    def without_history(self, who: str) -> str:
        """What ``who`` (this policy, as the admin configured it) does when no run history can be had."""
        return f"{who} predicts from requested times"

    def describe(self) -> str:
        return self.name
