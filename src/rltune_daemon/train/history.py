"""The run history an episode starts with: what a scheduler knew when the episode's first job arrived.

Episodes are windows of the training part. A history-based policy (QSSF as base policy, a model with
the ``hist_time`` input) gets the training jobs *before* the window that had finished by its first
submit (trace timing, ``submit + runtime``), then learns each job the episode finishes, as evaluation
and the daemon do. Nothing from inside or after the window leaks in.
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.arrays import JobTable
from rltune_daemon.domain.history import FinishedRuns, RunHistory
from rltune_daemon.domain.workload import Workload
from rltune_daemon.features.schema import new_history
from rltune_daemon.policies.base import Policy


class EpisodeHistory:
    """Runs of a training part, indexed so each episode's history is one selection."""

    def __init__(self, train: Workload) -> None:
        table = JobTable.from_jobs(train.jobs, train.cluster)
        self.rows = np.flatnonzero(~np.isnan(table.runtime)).astype(np.int64)
        self.runs = FinishedRuns.from_table(table)
        self.submit = table.submit

    def at(self, start: int) -> FinishedRuns:
        """Runs of jobs before row ``start`` that had ended by its submit time."""
        if start <= 0:
            return FinishedRuns.empty()
        cutoff = float(self.submit[start])
        known = (self.rows < start) & (self.runs.end <= cutoff)
        return self.runs.select(np.flatnonzero(known).astype(np.int64))

    def history(self, start: int) -> RunHistory:
        """A ``hist_time`` history (declared parameters) filled with ``at(start)``."""
        h = new_history()
        h.learn_runs(self.at(start))
        return h

    def prime(self, policy: Policy, start: int) -> Policy:
        """``policy`` given the episode's history when it learns from runs (QSSF); returned for chaining."""
        if policy.learns_history:
            policy.learn_runs(self.at(start))
        return policy
