"""What ``load_workload`` hands every loader: the common arguments, parsed once."""

from __future__ import annotations

from dataclasses import dataclass

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.workload import EstimateModel
from rltune_daemon.traces.assemble import RawJobs, resolve_estimates
from rltune_daemon.traces.estimates import DEFAULT_CAP
from rltune_daemon.traces.options import Options


@dataclass
class LoadContext:
    """``estimates_requested`` is the caller's choice (None: the trace's default); ``cluster`` a
    user-given cluster that replaces the trace's own."""

    opts: Options
    seed: int
    estimates_requested: str | None
    cluster: ClusterSpec | None
    default_cap: float = DEFAULT_CAP

    def estimates(self, raw: RawJobs, name: str) -> EstimateModel:
        return resolve_estimates(self.estimates_requested, raw.has_limits, name)
