"""Per-node resource shape of each job, derived once from its request and the cluster.

A job of ``g`` GPUs runs on ``k`` nodes with ``chunk = ceil(g / k)`` GPUs on each but the last (which gets
the remainder): ``k = 1`` when ``g`` fits one eligible node, else ``ceil(g / gpus_per_node)`` (or the
node count the job asked for). This is what ``--gres=gpu:<chunk> -N <k>`` gives on Slurm.
CPUs/memory: an explicit request is split evenly over the nodes (``-1`` marks "proportional to the
node's GPU share", the DefCpuPerGPU/DefMemPerGPU convention).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rltune_daemon.domain.arrays import I64, B, ClusterArrays, JobTable

PROPORTIONAL = -1


@dataclass(frozen=True)
class EligibilityIndex:
    """Which nodes each (type mask, partition) pair may use, and the largest node among them.

    Jobs share a handful of distinct pairs, so the boolean node masks are computed once per pair.
    """

    cluster: ClusterArrays
    _cache: dict[tuple[int, int], tuple[B, int]]
    _need: dict[tuple[int, int, int], tuple[I64, I64]]

    @staticmethod
    def build(cluster: ClusterArrays) -> EligibilityIndex:
        return EligibilityIndex(cluster, {}, {})

    def need(self, chunk: int, cpus_node: int, mem_node: int) -> tuple[I64, I64]:
        """CPUs and memory one chunk needs on every node (proportional requests depend on the node's
        CPU and memory per GPU). Cached: the simulator asks millions of times for a few shapes."""
        key = (chunk, cpus_node, mem_node)
        hit = self._need.get(key)
        if hit is None:
            cl = self.cluster
            per_gpu = np.maximum(cl.gpus_total, 1)
            c = (np.maximum(chunk * cl.cpus_total // per_gpu, 1) if cpus_node == PROPORTIONAL
                 else np.full(cl.n_nodes, cpus_node, dtype=np.int64))
            m = (chunk * cl.mem_total // per_gpu if mem_node == PROPORTIONAL
                 else np.full(cl.n_nodes, mem_node, dtype=np.int64))
            hit = (c.astype(np.int64), m.astype(np.int64))
            self._need[key] = hit
        return hit

    def get(self, type_mask: int, partition: int) -> tuple[B, int]:
        key = (type_mask, partition)
        hit = self._cache.get(key)
        if hit is None:
            cl = self.cluster
            ok = ((np.int64(1) << cl.gpu_type) & type_mask) != 0
            if partition >= 0:
                ok &= ((cl.partitions >> partition) & 1) == 1
            gpn = int(cl.gpus_total[ok].max()) if ok.any() else 0
            hit = (ok, gpn)
            self._cache[key] = hit
        return hit


@dataclass(frozen=True)
class JobShapes:
    """Columnar shapes aligned with a ``JobTable``'s rows. ``group`` numbers distinct eligibility pairs
    (``group_keys[group[i]]`` is row i's (type mask, partition))."""

    k: I64
    chunk: I64
    cpus_node: I64
    mem_node: I64
    group: I64
    group_keys: tuple[tuple[int, int], ...]
    feasible: B

    def __len__(self) -> int:
        return len(self.k)


def _codes(*columns: I64) -> tuple[I64, I64]:
    """Per row, a code of its tuple of column values (equal tuples, equal codes; codes 0..m-1), and the
    first row holding each code. One 1-D ``np.unique`` per column (``np.unique(axis=...)`` sorts void
    records, ~10x slower)."""
    n = len(columns[0])
    code = np.zeros(n, dtype=np.int64)
    for col in columns:
        _, inv = np.unique(col, return_inverse=True)
        inv = inv.reshape(-1).astype(np.int64)
        code = code * (int(inv.max(initial=0)) + 1) + inv
        _, code = np.unique(code, return_inverse=True)  # re-compress: codes stay < n, no overflow
        code = code.reshape(-1).astype(np.int64)
    _, first = np.unique(code, return_index=True)
    return code, first.astype(np.int64)


def job_shapes(table: JobTable, elig: EligibilityIndex) -> JobShapes:
    """Shapes for every row of ``table``. ``feasible`` is False for jobs no set of eligible nodes could
    ever hold: fewer than ``k`` eligible nodes whose capacity holds one chunk (GPUs, CPUs, memory), or
    no acceptable GPU type."""
    n = len(table)
    tm, part = table.type_mask, table.partition
    # the distinct (type mask, partition) pairs, numbered in the order they first appear
    pair, first = _codes(tm, part)
    seen = np.argsort(first, kind="stable")
    number = np.empty(len(seen), dtype=np.int64)
    number[seen] = np.arange(len(seen), dtype=np.int64)
    group = number[pair]
    gkeys = tuple((int(tm[first[c]]), int(part[first[c]])) for c in seen)
    per_group = [elig.get(*key) for key in gkeys]
    gpn = np.array([p[1] for p in per_group] + [0], dtype=np.int64)[group]
    g = table.gpus
    safe_gpn = np.maximum(gpn, 1)
    k = np.where(g <= gpn, 1, -(-g // safe_gpn))
    k = np.maximum(k, np.maximum(table.nodes_req, 1))
    chunk = np.where(g > 0, -(-g // k), 0)
    cpus_node = np.where(table.cpus > 0, -(-table.cpus // k), PROPORTIONAL)
    cpus_node = np.where((g == 0) & (table.cpus <= 0), 1, cpus_node)
    mem_node = np.where(table.mem_mb > 0, -(-table.mem_mb // k), PROPORTIONAL)
    cpus_node = cpus_node.astype(np.int64)
    mem_node = mem_node.astype(np.int64)
    chunk = chunk.astype(np.int64)
    # Feasible: at least k eligible nodes whose *capacity* holds one chunk (GPUs, CPUs and memory).
    cl = elig.cluster
    feasible = np.zeros(n, dtype=np.bool_)
    if n:
        inverse, first = _codes(group, chunk, cpus_node, mem_node)
        capacity = np.zeros(len(first), dtype=np.int64)
        for c, i in enumerate(first.tolist()):
            gi, ch, cn, mn = int(group[i]), int(chunk[i]), int(cpus_node[i]), int(mem_node[i])
            need_c, need_m = elig.need(ch, cn, mn)
            holds = per_group[gi][0] & (cl.gpus_total >= ch)
            holds &= (cl.cpus_total >= need_c) & (cl.mem_total >= need_m)
            capacity[c] = int(holds.sum())
        feasible = (capacity[inverse] >= k) & (table.type_mask != 0)
    return JobShapes(k.astype(np.int64), chunk, cpus_node, mem_node, group, gkeys, feasible)
