"""What ``load_workload`` hands every loader: the common arguments, parsed once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.workload import EstimateModel
from rltune_daemon.errors import UserError
from rltune_daemon.traces.assemble import RawJobs, resolve_estimates
from rltune_daemon.traces.estimates import DEFAULT_CAP
from rltune_daemon.traces.options import Options


@dataclass
class LoadContext:
    """``estimates_requested`` is the caller's choice (None: the trace's default); ``cluster`` a
    user-given cluster that replaces the trace's own; ``default_partition`` (option of every trace) the
    partition for jobs that name none."""

    opts: Options
    seed: int
    estimates_requested: str | None
    cluster: ClusterSpec | None
    default_cap: float = DEFAULT_CAP
    default_partition: str | None = field(init=False)

    def __post_init__(self) -> None:
        # read before any loader's opts.finish(), so every trace accepts it
        self.default_partition = self.opts.text("default_partition")

    def estimates(self, raw: RawJobs, name: str) -> EstimateModel:
        return resolve_estimates(self.estimates_requested, raw.has_limits, name)

    def partitions(self, raw: RawJobs, cluster: ClusterSpec, inferred: bool = False) -> RawJobs:
        """``raw`` with ``default_partition`` given to the jobs that name no partition. Without it, such
        jobs on a cluster of several partitions are an error: the simulator would put them in the first
        one, and which partition a job is in decides its nodes, tier and priority factor. On a cluster
        of one partition they run there, as before, and so on an ``inferred`` one (built from the jobs:
        every node is in every partition they name, all with the same tier and factor)."""
        names = cluster.partition_names
        parts = raw.partition if raw.partition is not None else [""] * len(raw)
        empty = sum(1 for p in parts if not p)
        default = self.default_partition
        if default is not None:
            if default not in names:
                raise UserError(f"{self.opts.trace}: option default_partition={default!r} is not a partition "
                                f"of the cluster (partitions: {', '.join(names)})")
            notes = {**raw.notes, "partition_defaulted": empty}
            return dataclasses.replace(raw, partition=[p or default for p in parts], notes=notes)
        if empty and len(names) > 1 and not inferred:
            raise UserError(
                f"{self.opts.trace}: {empty:,} jobs have no partition and the cluster has partitions "
                f"{', '.join(names)}: add a partition column to the trace, or map them with the trace "
                f"option default_partition={names[0]} (--opt default_partition={names[0]})"
            )
        return raw
