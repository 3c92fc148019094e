"""Finished runs: what history-based policies (QSSF) learn from, whatever the source.

The simulator gives them from a trace's training part and from jobs it finishes; a live Slurm from
``sacct`` (``slurm.history``). One type, so QSSF learns the same way offline and on a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, JobTable


@dataclass(frozen=True)
class FinishedRuns:
    """Finished jobs as columns: who ran how many GPUs for how long, and when each ended. ``end`` only
    orders the runs (epoch seconds live, trace seconds offline); rows need not be sorted."""

    ids: tuple[str, ...]
    users: tuple[str, ...]
    gpus: I64
    runtime: F64
    end: F64

    def __len__(self) -> int:
        return len(self.ids)

    def by_end(self) -> I64:
        """Row order oldest end first (stable, so equal ends keep their source order)."""
        return np.argsort(self.end, kind="stable").astype(np.int64)

    @classmethod
    def empty(cls) -> FinishedRuns:
        return cls((), (), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))

    @classmethod
    def from_table(cls, table: JobTable) -> FinishedRuns:
        """The rows of ``table`` with a known runtime; a trace has no end times, so ``submit +
        runtime`` orders them (the start is what a schedule decides, not the trace)."""
        rows = np.flatnonzero(~np.isnan(table.runtime))
        return cls(
            ids=tuple(table.ids[r] for r in rows),
            users=tuple(table.users[table.user[r]] for r in rows),
            gpus=table.gpus[rows].astype(np.int64),
            runtime=table.runtime[rows].astype(np.float64),
            end=(table.submit[rows] + table.runtime[rows]).astype(np.float64),
        )

    def select(self, rows: I64) -> FinishedRuns:
        return FinishedRuns(tuple(self.ids[r] for r in rows), tuple(self.users[r] for r in rows),
                            self.gpus[rows], self.runtime[rows], self.end[rows])
