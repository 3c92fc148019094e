"""Reservations after the first (``SimConfig.bf_reservations`` > 1): when a blocked job can start for its
whole requested time, given running jobs' requested ends and the reservations made before it.

Free resources are a step function of time: they grow where a running job or an earlier reservation
ends and shrink where an earlier reservation starts. The function is built once per job as a small
matrix (one row per change point at or after the job's earliest start ignoring reservations, one
column per node), so each candidate start is a slice of it rather than a Python loop over the earlier
reservations. A node can take one chunk of the job from ``t`` iff it can in every row of
``[t, t + requested time)``: a cumulative count of the rows where it cannot answers that for every
start at once. Starting at a point where free resources only shrink is never earlier than starting at
the change point that precedes it, so testing every change point gives the same answer as testing the
growth points only (the first version of this code, kept in tests as the reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, B, ClusterArrays
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.placement.allocate import Allocation, FreeView, allocate, candidate_nodes
from rltune_daemon.placement.shapes import EligibilityIndex, JobShapes


@dataclass
class Reservation:
    """Where a blocked head job will start: time ``at`` and the free resources expected then."""

    head: int
    at: float
    free: FreeView | None  # None: the head cannot run even on an empty cluster (then it blocks nothing)
    until: float = math.inf  # at + requested time (kept only where later reservations must avoid it)
    alloc: Allocation | None = None  # where it was planned (likewise)


def _profile(cl: ClusterArrays, times: F64, prior: list[Reservation]) -> tuple[I64, I64, I64]:
    """Free GPUs, CPUs and memory per node (columns) from each of ``times`` (rows) to the next."""
    s, n = len(times), cl.n_nodes
    rows = [np.searchsorted(times, cl.run_end, side="left")]  # first row where the running job is gone
    nodes = [cl.run_node]
    amounts = [[cl.run_gpus], [cl.run_cpus], [cl.run_mem]]
    held = [(r.at, r.until, r.alloc) for r in prior if r.alloc is not None]
    if held:
        allocs = [a for _, _, a in held]
        sizes = [len(a.nodes) for a in allocs]
        starts = np.searchsorted(times, [at for at, _, _ in held], side="left")
        stops = np.searchsorted(times, [until for _, until, _ in held], side="left")
        taken = np.concatenate([a.nodes for a in allocs])
        rows += [np.repeat(starts, sizes), np.repeat(stops, sizes)]
        nodes += [taken, taken]
        for acc, name in zip(amounts, ("gpus", "cpus", "mem"), strict=True):
            col = np.concatenate([getattr(a, name) for a in allocs])
            acc += [-col, col]
    row, node = np.concatenate(rows), np.concatenate(nodes)
    out = []
    for acc, now in zip(amounts, (cl.gpus_free, cl.cpus_free, cl.mem_free), strict=True):
        delta = np.zeros((s + 1, n), dtype=np.int64)
        np.add.at(delta, (row, node), np.concatenate(acc))
        out.append(now + np.cumsum(delta, axis=0)[:s])
    return out[0], out[1], out[2]


def plan_after(
    cl: ClusterArrays, elig: EligibilityIndex, shapes: JobShapes, head: int, gpus: int, duration: float,
    earliest: float, prior: list[Reservation], allowed: B | None,
) -> Reservation:
    """The earliest start at or after ``earliest`` (where the job fits on running jobs' ends alone) at
    which job ``head`` fits for ``duration`` beside the ``prior`` reservations, planned as a pack."""
    live = [r for r in prior if r.alloc is not None and r.until > earliest]
    later = [t for r in live for t in (r.at, r.until) if t > earliest]
    times = np.unique(np.concatenate([[earliest], cl.run_end[cl.run_end > earliest], later]))
    g, c, m = _profile(cl, times, live)
    # the allocator's own node test, on every row at once (an ineligible node is short in every row)
    short = ~candidate_nodes(cl, elig, shapes, head, FreeView(g, c, m), allowed)
    bad = np.zeros((len(times) + 1, cl.n_nodes), dtype=np.int64)
    np.cumsum(short, axis=0, out=bad[1:])
    first = np.arange(len(times))
    stop = np.maximum(np.searchsorted(times, times + duration, side="left"), first + 1)
    fits = ((bad[stop] - bad[first]) == 0).sum(axis=1) >= int(shapes.k[head])
    hit = np.flatnonzero(fits)
    if not len(hit):
        return Reservation(head, math.inf, None)  # not reached: after every end the first view is back
    j = int(hit[0])
    view = FreeView(g[j:stop[j]].min(axis=0), c[j:stop[j]].min(axis=0), m[j:stop[j]].min(axis=0))
    alloc = allocate(cl, elig, shapes, head, gpus, PlacementKind.PACK, view, allowed)
    at = float(times[j])
    return Reservation(head, at, view, at + duration, alloc)
