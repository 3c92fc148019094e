"""Typed domain model shared by traces, simulator, planner and the Slurm backend."""

from rltune_daemon.domain.arrays import ClusterArrays, JobTable, type_mask
from rltune_daemon.domain.cluster import DEFAULT_PARTITION, ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.domain.jobs import Job, job_order
from rltune_daemon.domain.plan import DEFAULT_PLACEMENT, Placement, PlacementKind, Plan, PlanEntry
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.domain.snapshot import NodeAlloc, NodeState, PendingState, RunningJob, Snapshot
from rltune_daemon.domain.workload import EstimateModel, Workload

__all__ = [
    "DEFAULT_PARTITION",
    "DEFAULT_PLACEMENT",
    "ClusterArrays",
    "ClusterSpec",
    "EffectsConfig",
    "EstimateModel",
    "Job",
    "JobTable",
    "NodeAlloc",
    "NodeSpec",
    "NodeState",
    "PartitionSpec",
    "PendingState",
    "Placement",
    "PlacementKind",
    "Plan",
    "PlanEntry",
    "QueueView",
    "RunningJob",
    "Snapshot",
    "Workload",
    "job_order",
    "type_mask",
]
