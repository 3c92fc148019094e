"""What a policy sees of the queue: the pending rows of a job table at one instant.

Policies score it, features are built from it, and the simulator, the planner and the daemon each fill
one in; it sits in the domain so the feature builder and the policies that call it share the type
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, ClusterArrays, JobTable, places
from rltune_daemon.domain.history import RunHistory


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
