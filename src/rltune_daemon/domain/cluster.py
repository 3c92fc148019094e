"""Cluster shape: nodes, GPU types and partitions.

A cluster is static configuration; its changing occupancy lives in ``snapshot.NodeState`` (typed) and
``arrays.ClusterArrays`` (columnar, for the simulator's hot path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

DEFAULT_PARTITION = "default"


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node. ``gpu_type`` is "" on CPU-only nodes; on a CPU-only *cluster* the scheduled unit is the
    processor and ``gpus`` counts processors (see ``ClusterSpec.resource``)."""

    name: str
    gpu_type: str
    gpus: int
    cpus: int
    mem_mb: int
    partitions: tuple[str, ...] = (DEFAULT_PARTITION,)


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """Slurm partition knobs that change scheduling order: ``priority_tier`` (higher tier is scheduled
    first whatever the job priority) and ``priority_job_factor`` (the multifactor partition factor)."""

    name: str
    priority_tier: int = 1
    priority_job_factor: int = 1


@dataclass(frozen=True)
class ClusterSpec:
    """A named set of nodes and partitions. ``resource`` says what ``gpus`` counts."""

    name: str
    nodes: tuple[NodeSpec, ...]
    partitions: tuple[PartitionSpec, ...] = (PartitionSpec(DEFAULT_PARTITION),)
    resource: Literal["gpu", "cpu"] = "gpu"
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"cluster {self.name!r}: duplicate node names")
        known = {p.name for p in self.partitions}
        for n in self.nodes:
            missing = set(n.partitions) - known
            if missing:
                raise ValueError(
                    f"cluster {self.name!r}: node {n.name} names unknown partition(s) {sorted(missing)}"
                )

    @cached_property
    def gpu_types(self) -> tuple[str, ...]:
        """Sorted distinct GPU types; the index of a type here is its bit in a job's type mask."""
        return tuple(sorted({n.gpu_type for n in self.nodes}))

    @cached_property
    def partition_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.partitions)

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    @property
    def total_cpus(self) -> int:
        return sum(n.cpus for n in self.nodes)

    def partition(self, name: str) -> PartitionSpec:
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(name)

    def describe(self) -> str:
        """One line per node group, e.g. ``2 x p100 (4 GPUs, 8 CPUs, 64000 MB)``."""
        groups: dict[tuple[str, int, int, int], int] = {}
        for n in self.nodes:
            key = (n.gpu_type, n.gpus, n.cpus, n.mem_mb)
            groups[key] = groups.get(key, 0) + 1
        unit = "GPUs" if self.resource == "gpu" else "processors"
        return "; ".join(
            f"{count} x {t or 'cpu'} ({g} {unit}, {c} CPUs, {m} MB)" for (t, g, c, m), count in groups.items()
        )
