"""Find allocations on a cluster state: the simulator's scheduler and the placement MILP share these.

``pack`` is Slurm ``cons_tres`` best fit: the fewest GPUs left over, so partially used nodes fill
first. ``spread`` only uses nodes with no running job, so the job runs alone (no co-location
slowdown) at the cost of breaking up idle nodes. Both use the job's minimum node count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rltune_daemon.domain.arrays import I64, B, ClusterArrays
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.placement.shapes import PROPORTIONAL, EligibilityIndex, JobShapes


@dataclass(frozen=True, slots=True)
class Allocation:
    """Nodes (indices into ``ClusterArrays``) and what the job takes on each."""

    kind: PlacementKind
    nodes: I64
    gpus: I64
    cpus: I64
    mem: I64

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)


@dataclass
class FreeView:
    """Free resources to test against: the live arrays, or a hypothetical future (reservations)."""

    gpus: I64
    cpus: I64
    mem: I64


def live_view(cl: ClusterArrays) -> FreeView:
    return FreeView(cl.gpus_free, cl.cpus_free, cl.mem_free)


def candidate_nodes(
    cl: ClusterArrays, elig: EligibilityIndex, shapes: JobShapes, row: int, free: FreeView,
    allowed: B | None = None,
) -> B:
    """Nodes that can hold one chunk of job ``row`` now (under ``free``)."""
    tmask, part = shapes.group_keys[int(shapes.group[row])]
    ok, _ = elig.get(tmask, part)
    chunk = int(shapes.chunk[row])
    c, m = elig.need(chunk, int(shapes.cpus_node[row]), int(shapes.mem_node[row]))
    mask: B = ok & cl.usable & (free.gpus >= chunk) & (free.cpus >= c) & (free.mem >= m)
    if allowed is not None:
        mask &= allowed
    return mask


def fits(cl: ClusterArrays, elig: EligibilityIndex, shapes: JobShapes, row: int, free: FreeView) -> bool:
    """Whether some allocation of the job exists under ``free`` (any placement style)."""
    return int(candidate_nodes(cl, elig, shapes, row, free).sum()) >= int(shapes.k[row])


def allocate(
    cl: ClusterArrays, elig: EligibilityIndex, shapes: JobShapes, row: int, gpus_total: int,
    kind: PlacementKind = PlacementKind.PACK, free: FreeView | None = None, allowed: B | None = None,
) -> Allocation | None:
    """An allocation of ``kind`` for job ``row`` (``gpus_total`` GPUs), or None if none exists now.

    ``allowed`` restricts the nodes (a ReqNodeList hint). ``DEFAULT`` means ``PACK``.
    """
    fv = free if free is not None else live_view(cl)
    mask = candidate_nodes(cl, elig, shapes, row, fv, allowed)
    if kind is PlacementKind.SPREAD:
        mask &= cl.jobs_on == 0
    cand = np.flatnonzero(mask)
    k = int(shapes.k[row])
    if len(cand) < k:
        return None
    # spread: smallest idle node that fits (keep big idle nodes for big jobs); pack: least free GPUs first
    key = cl.gpus_total[cand] if kind is PlacementKind.SPREAD else fv.gpus[cand]
    pick = cand[np.lexsort((cand, key))[:k]] if len(cand) > k else cand
    pick = np.sort(pick)
    chunk = int(shapes.chunk[row])
    gpus = np.full(k, chunk, dtype=np.int64)
    if k:
        gpus[-1] = gpus_total - chunk * (k - 1)
    cpus_node, mem_node = int(shapes.cpus_node[row]), int(shapes.mem_node[row])
    if cpus_node == PROPORTIONAL:
        cpus = np.maximum(gpus * cl.cpus_total[pick] // np.maximum(cl.gpus_total[pick], 1), 1)
    else:
        cpus = np.full(k, cpus_node, dtype=np.int64)
    if mem_node == PROPORTIONAL:
        mem = gpus * cl.mem_total[pick] // np.maximum(cl.gpus_total[pick], 1)
    else:
        mem = np.full(k, mem_node, dtype=np.int64)
    style = kind if kind is not PlacementKind.DEFAULT else PlacementKind.PACK
    return Allocation(style, pick, gpus, cpus, mem)


def take(free: FreeView, alloc: Allocation) -> None:
    """Subtract an allocation from ``free`` in place."""
    np.subtract.at(free.gpus, alloc.nodes, alloc.gpus)
    np.subtract.at(free.cpus, alloc.nodes, alloc.cpus)
    np.subtract.at(free.mem, alloc.nodes, alloc.mem)


def give(free: FreeView, alloc: Allocation) -> None:
    """Add an allocation back to ``free`` in place."""
    np.add.at(free.gpus, alloc.nodes, alloc.gpus)
    np.add.at(free.cpus, alloc.nodes, alloc.cpus)
    np.add.at(free.mem, alloc.nodes, alloc.mem)
