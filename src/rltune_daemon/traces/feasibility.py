"""Which jobs a cluster could ever run, decided once at load time so that no loader drops jobs silently.

The rule mirrors how the simulator shapes a job: with ``gpn`` the largest GPU count of an eligible
node, a job of ``g`` GPUs runs on ``k = 1`` node if ``g <= gpn`` else ``ceil(g / gpn)`` nodes (at least
its requested node count), with ``ceil(g / k)`` GPUs and ``ceil(cpus / k)`` CPUs, ``ceil(mem / k)`` MB
per node. It is feasible when at least ``k`` eligible nodes (right partition, acceptable GPU type) can
each hold that share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rltune_daemon.domain.arrays import I64, B
from rltune_daemon.domain.cluster import ClusterSpec


@dataclass(frozen=True)
class Verdict:
    """``ok[i]`` is True for runnable jobs; ``unknown_type[i]`` marks jobs whose GPU types the cluster
    does not have at all (a separate drop reason)."""

    ok: B
    unknown_type: B


def check(
    cluster: ClusterSpec,
    gpus: I64,
    nodes: I64,
    cpus: I64,
    mem_mb: I64,
    gpu_types: list[tuple[str, ...]],
    partition: list[str],
) -> Verdict:
    """Vectorised per distinct (types, partition) pair; there are only a handful in any trace."""
    n = len(gpus)
    node_gpus = np.array([nd.gpus for nd in cluster.nodes], dtype=np.int64)
    node_cpus = np.array([nd.cpus for nd in cluster.nodes], dtype=np.int64)
    node_mem = np.array([nd.mem_mb for nd in cluster.nodes], dtype=np.int64)
    node_type = [nd.gpu_type.lower() for nd in cluster.nodes]
    first = cluster.partitions[0].name
    ok = np.zeros(n, dtype=np.bool_)
    unknown = np.zeros(n, dtype=np.bool_)
    groups: dict[tuple[tuple[str, ...], str], list[int]] = {}
    for i, key in enumerate(zip(gpu_types, partition, strict=True)):
        groups.setdefault(key, []).append(i)
    for (types, part), rows_list in groups.items():
        rows = np.array(rows_list, dtype=np.int64)
        wanted = {t.lower() for t in types}
        if wanted and not wanted & set(node_type):
            unknown[rows] = True
            continue
        pname = part or first
        elig = np.array(
            [
                (not wanted or t in wanted) and pname in nd.partitions
                for t, nd in zip(node_type, cluster.nodes, strict=True)
            ],
            dtype=np.bool_,
        )
        if not elig.any():
            continue
        gpn = int(node_gpus[elig].max())
        g = gpus[rows]
        k = np.where(g <= gpn, 1, -(-g // max(gpn, 1)))
        k = np.maximum(k, np.maximum(nodes[rows], 1))
        chunk = -(-g // k)
        c = np.where(cpus[rows] > 0, -(-cpus[rows] // k), 0)
        m = np.where(mem_mb[rows] > 0, -(-mem_mb[rows] // k), 0)
        eg, ec, em = node_gpus[elig], node_cpus[elig], node_mem[elig]
        # distinct shapes x eligible nodes stays small even for million-job traces
        shapes, inverse = np.unique(np.stack([k, chunk, c, m], axis=1), axis=0, return_inverse=True)
        sk, sg, sc, sm = shapes[:, 0], shapes[:, 1], shapes[:, 2], shapes[:, 3]
        holds = (eg[None, :] >= sg[:, None]) & (ec[None, :] >= sc[:, None]) & (em[None, :] >= sm[:, None])
        ok[rows] = (holds.sum(axis=1) >= sk)[inverse.reshape(-1)]
    return Verdict(ok, unknown)
