"""Per-job shapes and per-eligibility-group cluster aggregates for the pending rows, vectorised.

Jobs share a handful of (GPU type mask, partition) pairs and of (pair, chunk, CPUs, memory) shapes, so
node-level work is done once per distinct pair/shape (matrices of distinct-keys x nodes) and broadcast
back to the jobs; no Python loop runs per job. ``pending_shapes`` mirrors ``placement.shapes.job_shapes``
for a subset of rows (a test keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rltune_daemon.domain.arrays import F64, I64, B, ClusterArrays, JobTable
from rltune_daemon.placement.shapes import PROPORTIONAL, EligibilityIndex


@dataclass(frozen=True)
class PendingShapes:
    """Shapes of the pending rows (aligned with ``idx``) and their eligibility groups."""

    group: I64  # index into ``elig`` per job
    elig: B  # (groups, nodes): nodes of an accepted type in the job's partition (usable or not)
    k: I64
    chunk: I64
    cpus_node: I64
    mem_node: I64


def _inverse(keys: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], I64]:
    """Distinct rows of ``keys`` (n x c) and each row's index among them. Columns are combined into one
    compact code with 1-D ``np.unique`` calls (``np.unique(axis=0)`` sorts void records, ~10x slower)."""
    n = len(keys)
    if n == 0:
        return keys, np.zeros(0, dtype=np.int64)
    code = np.zeros(n, dtype=np.int64)
    for c in range(keys.shape[1]):
        values, inv = np.unique(keys[:, c], return_inverse=True)
        code = code * len(values) + inv.reshape(-1)
        _, code = np.unique(code, return_inverse=True)  # re-compress: codes stay < n, no overflow
        code = code.reshape(-1).astype(np.int64)
    _, first = np.unique(code, return_index=True)
    return keys[first], code


def pending_shapes(table: JobTable, idx: I64, elig_index: EligibilityIndex) -> PendingShapes:
    uniq, group = _inverse(np.stack([table.type_mask[idx], table.partition[idx]], axis=1))
    per_group = [elig_index.get(int(tm), int(p)) for tm, p in uniq]
    n_nodes = elig_index.cluster.n_nodes
    elig = (np.stack([p[0] for p in per_group]) if per_group
            else np.zeros((0, n_nodes), dtype=np.bool_))
    gpn = np.array([p[1] for p in per_group] + [0], dtype=np.int64)[group]
    g = table.gpus[idx]
    k = np.where(g <= gpn, 1, -(-g // np.maximum(gpn, 1)))
    k = np.maximum(k, np.maximum(table.nodes_req[idx], 1))
    chunk = np.where(g > 0, -(-g // k), 0)
    cpus, mem = table.cpus[idx], table.mem_mb[idx]
    cpus_node = np.where(cpus > 0, -(-cpus // k), PROPORTIONAL)
    cpus_node = np.where((g == 0) & (cpus <= 0), 1, cpus_node)
    mem_node = np.where(mem > 0, -(-mem // k), PROPORTIONAL)
    return PendingShapes(group, elig, k.astype(np.int64), chunk.astype(np.int64), cpus_node.astype(np.int64),
                         mem_node.astype(np.int64))


def fitting_nodes(cl: ClusterArrays, sh: PendingShapes) -> I64:
    """Per job: nodes that can take one chunk now (eligible, usable, enough free GPUs/CPUs/memory), the
    same test as ``placement.allocate.candidate_nodes`` on the live free resources."""
    uniq, inv = _inverse(np.stack([sh.group, sh.chunk, sh.cpus_node, sh.mem_node], axis=1))
    if len(uniq) == 0:
        return np.zeros(0, dtype=np.int64)
    grp, chunk, cpn, mpn = (uniq[:, i : i + 1] for i in range(4))
    per_gpu = np.maximum(cl.gpus_total, 1)
    need_c = np.where(cpn == PROPORTIONAL, np.maximum(chunk * cl.cpus_total // per_gpu, 1), cpn)
    need_m = np.where(mpn == PROPORTIONAL, chunk * cl.mem_total // per_gpu, mpn)
    fit = (sh.elig[grp[:, 0]] & cl.usable & (cl.gpus_free >= chunk) & (cl.cpus_free >= need_c)
           & (cl.mem_free >= need_m))
    counts: I64 = fit.sum(axis=1).astype(np.int64)
    return counts[inv]


@dataclass(frozen=True)
class GroupStats:
    """Cluster aggregates per eligibility group (rows of ``PendingShapes.elig``)."""

    gpus: F64  # GPUs of usable eligible nodes
    capacity: F64  # GPUs of all eligible nodes (usable or not)
    free: F64  # free GPUs on usable eligible nodes
    released: F64  # GPUs of running jobs on usable eligible nodes whose requested end is within the horizon
    nodes: F64  # usable eligible nodes
    idle_nodes: F64  # ... of which run nothing
    free_sq: F64  # sum(free^2 / gpus) over usable eligible nodes (CFF numerator)
    cpus_per_gpu: F64  # mean CPUs per GPU of eligible nodes (proportional requests)
    mem_per_gpu: F64


def group_stats(cl: ClusterArrays, elig: B, now: float, horizon: float) -> GroupStats:
    usable = elig & cl.usable
    mu = usable.astype(np.float64)
    mall = elig.astype(np.float64)
    gt = cl.gpus_total.astype(np.float64)
    free = cl.gpus_free.astype(np.float64)
    idle = ((cl.jobs_on == 0) & (cl.gpus_free == cl.gpus_total)).astype(np.float64)
    soon = cl.run_end <= now + horizon
    released_node = np.bincount(cl.run_node[soon], weights=cl.run_gpus[soon].astype(np.float64),
                                minlength=cl.n_nodes)[: cl.n_nodes]
    per_gpu = np.maximum(gt, 1.0)
    n_elig = np.maximum(mall.sum(axis=1), 1.0)
    return GroupStats(
        gpus=mu @ gt, capacity=mall @ gt, free=mu @ free, released=mu @ released_node, nodes=mu.sum(axis=1),
        idle_nodes=mu @ idle, free_sq=mu @ (free * free / per_gpu),
        cpus_per_gpu=(mall @ (cl.cpus_total / per_gpu)) / n_elig,
        mem_per_gpu=(mall @ (cl.mem_total / per_gpu)) / n_elig,
    )
