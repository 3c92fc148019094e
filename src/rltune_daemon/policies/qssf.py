"""QSSF, Quasi-Shortest-Service-First (Hu et al., SC'21, the Helios scheduler).

Priority is the job's expected GPU service, ``gpus x predicted duration``, smallest first. The
duration is predicted at submission from history, as Helios does, without application knowledge: the
mean of the user's last ``window`` runs with the same GPU count, else of the user's last runs, else of
all recent runs, else the requested time. History comes from ``fit_history`` (the training split) and
grows with every finished job; on a live cluster the daemon feeds it ``sacct`` (``learn_runs``).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from rltune_daemon.domain.arrays import F64, JobTable
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.policies.base import Policy, QueueView


class QSSF(Policy):
    name = "qssf"
    static = True  # a job's prediction is fixed at submission
    learns_history = True

    def __init__(self, window: int = 10) -> None:
        self.window = window
        self._by_key: dict[tuple[str, int], deque[float]] = {}
        self._by_user: dict[str, deque[float]] = {}
        self._all: deque[float] = deque(maxlen=200)
        self._pred: dict[str, float] = {}
        self.runs_learned = 0

    def _learn(self, user: str, gpus: int, runtime: float) -> None:
        self._by_key.setdefault((user, gpus), deque(maxlen=self.window)).append(runtime)
        self._by_user.setdefault(user, deque(maxlen=self.window)).append(runtime)
        self._all.append(runtime)
        self.runs_learned += 1

    def learn_runs(self, runs: FinishedRuns) -> None:
        for row in runs.by_end():
            rt = float(runs.runtime[row])
            if np.isfinite(rt):
                self._learn(runs.users[row], int(runs.gpus[row]), rt)

    def observe_finish(self, table: JobTable, row: int, runtime: float) -> None:
        self._learn(table.users[table.user[row]], int(table.gpus[row]), runtime)

    def predict(self, table: JobTable, row: int) -> float:
        job_id = table.ids[row]
        hit = self._pred.get(job_id)
        if hit is None:
            user, gpus = table.users[table.user[row]], int(table.gpus[row])
            hist = self._by_key.get((user, gpus)) or self._by_user.get(user) or self._all
            hit = float(np.mean(hist)) if hist else float(table.time_limit[row])
            self._pred[job_id] = hit
        return hit

    def scores(self, view: QueueView) -> F64:
        t = view.table
        if len(self._pred) > 4 * len(view.idx) + 4096:
            # a daemon sees millions of job ids over months: forget the predictions of jobs that
            # left the queue (a job still pending keeps its prediction)
            keep = {t.ids[int(r)] for r in view.idx}
            self._pred = {k: v for k, v in self._pred.items() if k in keep}
        pred = np.fromiter((self.predict(t, int(r)) for r in view.idx), dtype=np.float64, count=len(view.idx))
        return np.maximum(t.gpus[view.idx], 1) * pred
