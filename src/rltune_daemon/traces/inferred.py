"""The smallest cluster that can run every job of a file that came without one (``sacct``/CSV).

For each GPU type the jobs name (untyped jobs: type ``gpu``), one homogeneous node group: GPUs per node
= the largest per-node share any job of that type needs (``ceil(gpus / max(nodes, 1))``), node count =
the most nodes any of them needs. CPUs and memory per node: what jobs need per node, at least 8 CPUs and
32,000 MB per GPU (a common DefCpuPerGPU/DefMemPerGPU scale). All nodes are in every partition the jobs
name. Such a cluster only proves feasibility: it says nothing about the real contention, so pass the
real cluster (``--cluster``) for any measurement.
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.arrays import I64
from rltune_daemon.domain.cluster import DEFAULT_PARTITION, ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.errors import InputFileError
from rltune_daemon.traces.assemble import RawJobs
from rltune_daemon.traces.limits import MAX_NODES, too_many_gpu_types

UNTYPED = "gpu"
CPUS_PER_GPU, MEM_PER_GPU = 8, 32_000


def infer(
    name: str,
    gpus: I64,
    nodes: I64,
    cpus: I64,
    mem_mb: I64,
    gpu_types: list[tuple[str, ...]],
    partitions: list[str],
    resource: str = "gpu",
) -> ClusterSpec:
    """See module docstring. ``resource="cpu"``: ``gpus`` counts processors, nodes have no GPU type.
    ``ValueError`` when that cluster could not be simulated (too many nodes or GPU types)."""
    k = np.maximum(nodes, 1)
    per_node = -(-gpus // k)
    cpn = -(-cpus // k)
    mpn = -(-mem_mb // k)
    groups: dict[str, list[int]] = {}
    for i, types in enumerate(gpu_types):
        key = "" if resource == "cpu" else (types[0] if types else UNTYPED)
        groups.setdefault(key, []).append(i)
    parts = [p for p in dict.fromkeys(partitions) if p] or [DEFAULT_PARTITION]
    problem = too_many_gpu_types(groups)
    if problem:
        raise ValueError(problem)
    shapes: list[tuple[str, I64, int, int]] = []
    for gtype, rows_list in groups.items():
        rows = np.array(rows_list, dtype=np.int64)
        gpn = max(int(per_node[rows].max()), 1)
        shapes.append((gtype, rows, gpn, int(np.maximum(k[rows], -(-gpus[rows] // gpn)).max())))
    total = sum(s[3] for s in shapes)
    if total > MAX_NODES:  # checked before the nodes are built one by one
        raise ValueError(f"the jobs need {total:,} nodes, more than {MAX_NODES:,}")
    specs: list[NodeSpec] = []
    for gtype, rows, gpn, count in shapes:
        if resource == "cpu":
            node_cpus, node_mem = gpn, max(int(mpn[rows].max()), MEM_PER_GPU // CPUS_PER_GPU * gpn)
        else:
            node_cpus = max(int(cpn[rows].max()), CPUS_PER_GPU * gpn)
            node_mem = max(int(mpn[rows].max()), MEM_PER_GPU * gpn)
        prefix = gtype or "node"
        specs += [
            NodeSpec(f"{prefix}-{i}", gtype, gpn, node_cpus, node_mem, tuple(parts))
            for i in range(1, count + 1)
        ]
    if not specs:
        specs = [
            NodeSpec(
                "node-1", UNTYPED if resource == "gpu" else "", 1, CPUS_PER_GPU, MEM_PER_GPU, tuple(parts)
            )
        ]
    return ClusterSpec(
        f"{name}-inferred",
        tuple(specs),
        tuple(PartitionSpec(p) for p in parts),
        "cpu" if resource == "cpu" else "gpu",
        notes="inferred: the smallest cluster that runs every job; pass --cluster for the real one",
    )


def from_raw(name: str, raw: RawJobs, resource: str = "gpu", path: str = "") -> ClusterSpec:
    """``infer`` over the jobs of ``raw`` that ran (runtime > 0) and ask for something; a cluster that
    cannot be built is an ``InputFileError`` of the trace file ``path``."""
    idx = np.flatnonzero(np.isfinite(raw.runtime) & (raw.runtime > 0) & (raw.gpus > 0))
    zeros = np.zeros(len(raw), dtype=np.int64)
    types = raw.gpu_types or [()] * len(raw)
    parts = raw.partition or [""] * len(raw)

    def col(a: I64 | None) -> I64:
        return (a if a is not None else zeros)[idx]

    try:
        return infer(
            name,
            raw.gpus[idx],
            col(raw.nodes),
            col(raw.cpus),
            col(raw.mem_mb),
            [types[i] for i in idx.tolist()],
            [parts[i] for i in idx.tolist()],
            resource,
        )
    except ValueError as exc:
        problem = f"cannot infer the cluster: {exc}"
        raise InputFileError(path or name, None, problem, "pass --cluster") from None
