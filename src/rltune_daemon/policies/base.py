"""The policy interface: score pending jobs, lower first (the convention of paper Table 5)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from rltune_daemon.domain.arrays import F64, JobTable
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.queue import QueueView


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
