"""A workload is a job list plus the cluster it runs on: what every trace loader returns."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.jobs import Job

EstimateModel = Literal["oracle", "user", "trace"]


@dataclass(frozen=True)
class Workload:
    """Jobs sorted by submit time on a cluster.

    ``estimates`` records where ``Job.time_limit`` came from: ``oracle`` (= runtime), ``user`` (the
    realistic user-estimate model of ``traces.estimates``) or ``trace`` (the trace's own requested time).
    ``meta`` carries provenance (source file, generator seed, dropped-job counts) into results.
    """

    name: str
    cluster: ClusterSpec
    jobs: tuple[Job, ...]
    estimates: EstimateModel = "trace"
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        subs = [j.submit for j in self.jobs]
        if any(b < a for a, b in itertools.pairwise(subs)):
            raise ValueError(f"workload {self.name!r}: jobs are not sorted by submit time")

    def __len__(self) -> int:
        return len(self.jobs)

    def with_jobs(self, jobs: tuple[Job, ...], **meta: Any) -> Workload:
        """Same cluster and estimate model, other jobs (e.g. an evaluation window)."""
        return Workload(self.name, self.cluster, jobs, self.estimates, {**self.meta, **meta})
