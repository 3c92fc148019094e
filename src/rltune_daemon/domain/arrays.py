"""Columnar (numpy) views of jobs and nodes.

Policies, features and placement work on these arrays so that one implementation serves both the
simulator's hot loop (tens of thousands of decisions) and the daemon (one decision a minute). The typed
objects in ``jobs``/``snapshot`` are the seams; ``JobTable.from_jobs`` and ``ClusterArrays.from_*``
convert at the seam, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.jobs import Job
from rltune_daemon.domain.snapshot import NodeState, PendingState, RunningJob

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


def places(order: npt.NDArray[np.intp] | I64) -> I64:
    """The inverse of a sorting permutation: ``places(order)[i]`` is element ``i``'s place in ``order``
    (0 = first), e.g. a job's rank from ``np.lexsort`` of the queue."""
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(len(order), dtype=np.int64)
    return out


def type_mask(gpu_types: Sequence[str], cluster_types: Sequence[str]) -> int:
    """Bit i set when ``cluster_types[i]`` is acceptable; an empty request accepts every type."""
    if not gpu_types:
        return (1 << len(cluster_types)) - 1
    wanted = {t.lower() for t in gpu_types}
    return sum(1 << i for i, t in enumerate(cluster_types) if t.lower() in wanted)


def _codes(values: Sequence[str]) -> tuple[I64, tuple[str, ...]]:
    names: dict[str, int] = {}
    out = np.fromiter((names.setdefault(v, len(names)) for v in values), dtype=np.int64, count=len(values))
    return out, tuple(names)


def _readonly(*arrays: npt.NDArray[np.generic]) -> None:
    for a in arrays:
        a.setflags(write=False)


@dataclass(frozen=True)
class JobTable:
    """Jobs as columns. Row i is ``ids[i]``. ``runtime`` is NaN where unknown (live jobs).

    ``cpus``/``mem_mb`` of 0 mean "proportional to the GPU share of the node the job lands on".
    ``partition`` indexes ``ClusterSpec.partitions``; ``tier`` and ``part_factor`` are that partition's
    PriorityTier and normalised PriorityJobFactor. ``priority`` is the scheduler's current priority
    (NaN when the source has none). ``user``/``account`` are codes into ``users``/``accounts``.
    """

    ids: tuple[str, ...]
    submit: F64
    time_limit: F64
    runtime: F64
    gpus: I64
    nodes_req: I64
    cpus: I64
    mem_mb: I64
    type_mask: I64
    partition: I64
    tier: I64
    part_factor: F64
    user: I64
    account: I64
    users: tuple[str, ...]
    accounts: tuple[str, ...]
    priority: F64

    def __len__(self) -> int:
        return len(self.ids)

    @staticmethod
    def from_jobs(
        jobs: Sequence[Job], cluster: ClusterSpec, states: Sequence[PendingState] | None = None
    ) -> JobTable:
        n = len(jobs)
        types = cluster.gpu_types
        pindex = {p.name: i for i, p in enumerate(cluster.partitions)}
        max_factor = max((p.priority_job_factor for p in cluster.partitions), default=1) or 1
        part = np.fromiter((pindex.get(j.partition or cluster.partitions[0].name, -1) for j in jobs),
                           dtype=np.int64, count=n)
        tiers = np.array([p.priority_tier for p in cluster.partitions] + [0], dtype=np.int64)
        factors = np.array([p.priority_job_factor / max_factor for p in cluster.partitions] + [0.0])
        user, users = _codes([j.user for j in jobs])
        account, accounts = _codes([j.account or j.user for j in jobs])
        prio = (np.array([float(s.priority) for s in states], dtype=np.float64) if states is not None
                else np.full(n, np.nan))
        masks: dict[tuple[str, ...], int] = {}  # a few distinct GPU type requests

        def mask_of(gpu_types: Sequence[str]) -> int:
            key = tuple(gpu_types)  # the same object when it is a tuple already
            hit = masks.get(key)
            if hit is None:
                hit = masks[key] = type_mask(key, types)
            return hit

        def column(name: str, dtype: type[np.generic]) -> npt.NDArray[Any]:
            return np.fromiter(map(attrgetter(name), jobs), dtype=dtype, count=n)

        table = JobTable(
            ids=tuple(map(attrgetter("id"), jobs)),
            submit=column("submit", np.float64),
            time_limit=column("time_limit", np.float64),
            runtime=np.fromiter((np.nan if j.runtime is None else j.runtime for j in jobs), dtype=np.float64,
                                count=n),
            gpus=column("gpus", np.int64),
            nodes_req=column("nodes", np.int64),
            cpus=column("cpus", np.int64),
            mem_mb=column("mem_mb", np.int64),
            type_mask=np.fromiter(map(mask_of, map(attrgetter("gpu_types"), jobs)), dtype=np.int64, count=n),
            part_factor=factors[part],
            tier=tiers[part],
            partition=part,
            user=user,
            account=account,
            users=users,
            accounts=accounts,
            priority=prio,
        )
        _readonly(table.submit, table.time_limit, table.runtime, table.gpus, table.nodes_req, table.cpus,
                  table.mem_mb, table.type_mask, table.partition, table.tier, table.part_factor, table.user,
                  table.account, table.priority)
        return table


@dataclass(kw_only=True)
class ClusterArrays:
    """Per-node capacity and free resources (mutable: the simulator updates it in place).

    ``partitions`` is a bitmask over ``ClusterSpec.partitions``; ``jobs_on`` counts running jobs per node
    (co-location). Running allocations are kept as flat rows (one per job and node) in ``run_*`` so a
    reservation can be computed with a sort and a ``bincount``.
    """

    names: tuple[str, ...]
    gpu_type: I64
    gpus_total: I64
    gpus_free: I64
    cpus_total: I64
    cpus_free: I64
    mem_total: I64
    mem_free: I64
    usable: B
    partitions: I64
    jobs_on: I64
    run_node: I64
    run_gpus: I64
    run_cpus: I64
    run_mem: I64
    run_end: F64
    run_job: I64

    @property
    def n_nodes(self) -> int:
        return len(self.names)

    @staticmethod
    def from_spec(cluster: ClusterSpec) -> ClusterArrays:
        """An idle cluster."""
        types = {t: i for i, t in enumerate(cluster.gpu_types)}
        pindex = {p.name: i for i, p in enumerate(cluster.partitions)}
        nodes = cluster.nodes
        gt = np.array([types[n.gpu_type] for n in nodes], dtype=np.int64)
        g = np.array([n.gpus for n in nodes], dtype=np.int64)
        c = np.array([n.cpus for n in nodes], dtype=np.int64)
        m = np.array([n.mem_mb for n in nodes], dtype=np.int64)
        pm = np.array([sum(1 << pindex[p] for p in n.partitions) for n in nodes], dtype=np.int64)
        empty_i = np.zeros(0, dtype=np.int64)
        return ClusterArrays(
            names=tuple(n.name for n in nodes), gpu_type=gt, gpus_total=g, gpus_free=g.copy(), cpus_total=c,
            cpus_free=c.copy(), mem_total=m, mem_free=m.copy(), usable=np.ones(len(nodes), dtype=np.bool_),
            partitions=pm, jobs_on=np.zeros(len(nodes), dtype=np.int64), run_node=empty_i,
            run_gpus=empty_i.copy(), run_cpus=empty_i.copy(), run_mem=empty_i.copy(),
            run_end=np.zeros(0, dtype=np.float64), run_job=empty_i.copy(),
        )

    @staticmethod
    def from_state(
        cluster: ClusterSpec, nodes: Sequence[NodeState], running: Sequence[RunningJob]
    ) -> ClusterArrays:
        """Occupancy as a live source reports it; ``cluster`` must come from the same nodes."""
        arr = ClusterArrays.from_spec(cluster)
        index = {n: i for i, n in enumerate(arr.names)}
        for i, ns in enumerate(nodes):
            arr.gpus_free[i] = max(ns.gpus - ns.gpus_alloc, 0)
            arr.cpus_free[i] = max(ns.cpus - ns.cpus_alloc, 0)
            arr.mem_free[i] = max(ns.mem_mb - ns.mem_alloc_mb, 0)
            arr.usable[i] = ns.usable
        rows = [(index[a.node], a.gpus, a.cpus, a.mem_mb, r.est_end, k)
                for k, r in enumerate(running) for a in r.allocation if a.node in index]
        if rows:
            cols = list(zip(*rows, strict=True))
            arr.run_node = np.array(cols[0], dtype=np.int64)
            arr.run_gpus = np.array(cols[1], dtype=np.int64)
            arr.run_cpus = np.array(cols[2], dtype=np.int64)
            arr.run_mem = np.array(cols[3], dtype=np.int64)
            arr.run_end = np.array(cols[4], dtype=np.float64)
            arr.run_job = np.array(cols[5], dtype=np.int64)
            arr.jobs_on = np.bincount(arr.run_node, minlength=arr.n_nodes).astype(np.int64)
        # A node with resources in use runs something even if no running job was reported on it.
        busy = (arr.gpus_free < arr.gpus_total) | (arr.cpus_free < arr.cpus_total)
        arr.jobs_on = np.maximum(arr.jobs_on, busy.astype(np.int64))
        return arr

    def copy(self) -> ClusterArrays:
        return ClusterArrays(
            names=self.names, gpu_type=self.gpu_type, gpus_total=self.gpus_total,
            gpus_free=self.gpus_free.copy(), cpus_total=self.cpus_total, cpus_free=self.cpus_free.copy(),
            mem_total=self.mem_total, mem_free=self.mem_free.copy(), usable=self.usable.copy(),
            partitions=self.partitions, jobs_on=self.jobs_on.copy(), run_node=self.run_node.copy(),
            run_gpus=self.run_gpus.copy(), run_cpus=self.run_cpus.copy(), run_mem=self.run_mem.copy(),
            run_end=self.run_end.copy(), run_job=self.run_job.copy(),
        )
