"""QSSF, Quasi-Shortest-Service-First (Hu et al., SC'21, the Helios scheduler).

Priority is the job's expected GPU service, ``gpus x predicted duration``, smallest first. The
duration is predicted at submission from history, as Helios does, without application knowledge: the
mean of the user's last ``window`` runs with the same GPU count, else of the user's last runs, else of
all recent runs, else the requested time. History comes from ``fit_history`` (the training split) and
grows with every finished job; on a live cluster the daemon feeds it ``sacct`` (``learn_runs``).
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.arrays import F64, JobTable
from rltune_daemon.domain.history import FinishedRuns, RunHistory
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.policies.base import Policy


class QSSF(Policy):
    name = "qssf"
    static = True  # a job's prediction is fixed at submission
    learns_history = True

    def __init__(self, window: int = 10) -> None:
        self.history = RunHistory(window)
        self._pred: dict[str, float] = {}

    @property
    def runs_learned(self) -> int:
        return self.history.runs

    def learn_runs(self, runs: FinishedRuns) -> None:
        self.history.learn_runs(runs)

    def observe_finish(self, table: JobTable, row: int, runtime: float) -> None:
        self.history.learn_row(table, row, runtime)

    def predict(self, table: JobTable, row: int) -> float:
        job_id = table.ids[row]
        hit = self._pred.get(job_id)
        if hit is None:
            hit = self.history.predict(table.users[table.user[row]], int(table.gpus[row]),
                                       float(table.time_limit[row]))
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
