"""Finished runs: what history-based policies (QSSF) learn from, whatever the source.

The simulator gives them from a trace's training part and from jobs it finishes; a live Slurm from
``sacct`` (``slurm.history``). One type, so QSSF learns the same way offline and on a cluster.
"""

from __future__ import annotations

from collections import deque
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


class RunHistory:
    """Helios' duration estimate from history (Hu et al., SC'21): the mean of the user's last ``window``
    runs with the same GPU count, else of the user's last runs, else of the last ``recent`` runs of
    anyone. Shared by QSSF and the learned policy's ``hist_time`` feature."""

    def __init__(self, window: int = 10, recent: int = 200) -> None:
        self.window = window
        self._by_key: dict[tuple[str, int], deque[float]] = {}
        self._by_user: dict[str, deque[float]] = {}
        self._all: deque[float] = deque(maxlen=recent)
        self.runs = 0

    def learn(self, user: str, gpus: int, runtime: float) -> None:
        self._by_key.setdefault((user, gpus), deque(maxlen=self.window)).append(runtime)
        self._by_user.setdefault(user, deque(maxlen=self.window)).append(runtime)
        self._all.append(runtime)
        self.runs += 1

    def learn_row(self, table: JobTable, row: int, runtime: float) -> None:
        """A job of ``table`` that just finished (the simulator's ``observe_finish``)."""
        self.learn(table.users[table.user[row]], int(table.gpus[row]), runtime)

    def learn_runs(self, runs: FinishedRuns) -> None:
        """Oldest end first, so the deques keep each user's latest runs."""
        for row in runs.by_end():
            rt = float(runs.runtime[row])
            if np.isfinite(rt):
                self.learn(runs.users[row], int(runs.gpus[row]), rt)

    def predict(self, user: str, gpus: int, default: float) -> float:
        """The estimate, or ``default`` (the requested time) with no history at all."""
        hist = self._by_key.get((user, gpus)) or self._by_user.get(user) or self._all
        return float(np.mean(hist)) if hist else default

    def predict_rows(self, table: JobTable, rows: I64, default: F64) -> F64:
        """``predict`` for ``table`` rows, one lookup per distinct (user, GPUs) pair."""
        out = np.array(default, dtype=np.float64, copy=True)
        if not len(rows) or not self.runs:
            return out
        keys = table.user[rows] * (int(table.gpus.max(initial=0)) + 1) + table.gpus[rows]
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        est = np.array([self.predict(table.users[table.user[rows[i]]], int(table.gpus[rows[i]]), np.nan)
                        for i in first])
        per_row = est[inverse.reshape(-1)]
        return np.where(np.isnan(per_row), out, per_row)

