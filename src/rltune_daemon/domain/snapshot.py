"""What a source (live Slurm or the simulator) sees at one instant: the input of ``planner.plan``."""

from __future__ import annotations

from dataclasses import dataclass, field

from rltune_daemon.domain.cluster import DEFAULT_PARTITION, ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.domain.jobs import Job


@dataclass(frozen=True, slots=True)
class PendingState:
    """Scheduler-side state of a pending job. From Slurm: squeue/sprio; from the simulator: its model.

    ``priority`` is the job's current priority *including* ``site_factor`` (Slurm's ``%Q``);
    ``admin_priority`` marks a priority frozen by an admin (``Priority=N``), on which SiteFactor has no
    effect; ``held`` marks priority 0 (a hold): such jobs are never touched.
    """

    priority: int = 0
    site_factor: int = 0
    reason: str = ""
    nice: int = 0
    req_nodes: str = ""
    exc_nodes: str = ""
    oversubscribe: str = "OK"
    admin_priority: bool = False
    held: bool = False
    array_job_id: str = ""


@dataclass(frozen=True, slots=True)
class NodeAlloc:
    """Resources one running job holds on one node."""

    node: str
    gpus: int
    cpus: int = 0
    mem_mb: int = 0


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A running job and where it runs. ``est_end`` = start + time limit: all a scheduler may assume."""

    job: Job
    start: float
    est_end: float
    allocation: tuple[NodeAlloc, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeState:
    """Node capacity and current allocation. ``usable`` is False for down/drained/unknown nodes."""

    name: str
    gpu_type: str
    gpus: int
    gpus_alloc: int
    cpus: int
    cpus_alloc: int
    mem_mb: int
    mem_alloc_mb: int
    partitions: tuple[str, ...] = (DEFAULT_PARTITION,)
    state: str = "idle"
    usable: bool = True

    @property
    def gpus_free(self) -> int:
        return max(self.gpus - self.gpus_alloc, 0) if self.usable else 0


@dataclass(frozen=True)
class Snapshot:
    """Pending jobs (with their scheduler state), running jobs and nodes at ``clock`` (seconds).

    ``pending_state`` is aligned with ``pending``. Both the Slurm backend and the simulator build this
    type, so everything downstream runs the same code on live and simulated clusters.
    """

    clock: float
    pending: tuple[Job, ...]
    pending_state: tuple[PendingState, ...]
    running: tuple[RunningJob, ...]
    nodes: tuple[NodeState, ...]
    partitions: tuple[PartitionSpec, ...] = (PartitionSpec(DEFAULT_PARTITION),)
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if len(self.pending) != len(self.pending_state):
            raise ValueError("snapshot: pending and pending_state differ in length")

    def cluster(self, name: str = "snapshot") -> ClusterSpec:
        """The static cluster shape behind this snapshot (node capacities and partitions)."""
        known = {p.name for p in self.partitions}
        parts = list(self.partitions)
        for n in self.nodes:
            for p in n.partitions:
                if p not in known:
                    known.add(p)
                    parts.append(PartitionSpec(p))
        nodes = tuple(
            NodeSpec(n.name, n.gpu_type, n.gpus, n.cpus, n.mem_mb, n.partitions) for n in self.nodes
        )
        return ClusterSpec(name, nodes, tuple(parts))
