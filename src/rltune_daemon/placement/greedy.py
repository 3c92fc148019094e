"""Greedy placement: jobs in rank order, each on Slurm's default best-fit (pack) allocation.

This is what Slurm's cons_tres does on its own, so it is both the MILP's fallback and the baseline the
MILP must beat."""

from __future__ import annotations

import time

from rltune_daemon.domain.arrays import I64
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.placement.allocate import Allocation, FreeView, allocate, take
from rltune_daemon.placement.context import PlacementContext, PlacementResult


def greedy_fill(ctx: PlacementContext, rows: I64, free: FreeView, out: dict[int, Allocation]) -> None:
    """Best fit for ``rows`` in order on ``free`` (taken from in place), adding to ``out``."""
    cl = ctx.cluster
    for r in rows:
        row = int(r)
        alloc = allocate(cl, ctx.elig, ctx.shapes, row, int(ctx.table.gpus[row]), PlacementKind.PACK, free)
        if alloc is not None:
            take(free, alloc)
            out[row] = alloc


def greedy_allocations(ctx: PlacementContext, rows: I64) -> dict[int, Allocation]:
    cl = ctx.cluster
    out: dict[int, Allocation] = {}
    greedy_fill(ctx, rows, FreeView(cl.gpus_free.copy(), cl.cpus_free.copy(), cl.mem_free.copy()), out)
    return out


def greedy_placer(ctx: PlacementContext, rows: I64) -> PlacementResult:
    t0 = time.perf_counter()
    allocs = greedy_allocations(ctx, rows)
    return PlacementResult(allocs, "greedy", "", time.perf_counter() - t0)
