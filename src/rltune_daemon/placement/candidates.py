"""Candidate placements for the top-K jobs: what the MILP chooses among.

Per job, in rank order and at most ``max_candidates`` distinct node sets:

1. the *greedy chain*: Slurm best fit after the higher-ranked jobs took their greedy allocations (so
   the greedy solution is always one of the MILP's feasible points and the MILP can only do better);
2. the *spread chain*: the same with spread (idle nodes; best fit when no spread exists);
3. best fit and spread on the current free resources, ignoring the other top-K jobs;
4. alternatives disjoint from all of the above, best fit first (partly used nodes fill first), so jobs
   that want the same node can be moved apart.

Each node set becomes one or two ``Option``s. A candidate that lies entirely on idle nodes gets an
*exclusive* option: the job runs alone (no slowdown) and reserves its nodes whole, so no other top-K job
can join and the GPUs it leaves free there are stranded for now. Every candidate also gets a *shared*
option: it takes only its own resources, others may join, and it pays the co-location slowdown (also
on idle nodes: those nodes are then open to co-location). The greedy allocation's shared option is
always present, so the greedy solution is a feasible point of the MILP.
"""

from __future__ import annotations

from dataclasses import dataclass

from rltune_daemon.domain.arrays import I64
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.placement.allocate import Allocation, FreeView, allocate, candidate_nodes, take
from rltune_daemon.placement.context import PlacementContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """One way to start one job. ``job`` is its position in rank order. ``reserve_*`` is what it takes
    from each node of ``alloc.nodes`` (everything free for an exclusive option). ``slowdown``: expected
    GPU-seconds lost, ``(effects.factor(shared, n_nodes) - 1) * gpus * requested seconds``.
    ``leftover``: GPUs it leaves free on nodes that were idle (stranded when exclusive, broken up when
    shared). ``default``: the allocation is the greedy (Slurm best-fit) one."""

    job: int
    row: int
    alloc: Allocation
    exclusive: bool
    reserve_gpus: I64
    reserve_cpus: I64
    reserve_mem: I64
    slowdown: float
    leftover: int
    default: bool


def key(a: Allocation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(int(n) for n in a.nodes), tuple(int(g) for g in a.gpus)


@dataclass(frozen=True)
class Candidates:
    """``allocs[i]``: distinct allocations of ``rows[i]``; ``greedy[i]``: its greedy-chain allocation (what
    ``greedy_placer`` gives it), None where greedy does not start it."""

    allocs: list[list[Allocation]]
    greedy: list[Allocation | None]


def candidate_allocations(ctx: PlacementContext, rows: I64, max_candidates: int) -> Candidates:
    """Distinct allocations per row (rank order), at most ``max_candidates`` each, chains first."""
    cl, elig, sh, table = ctx.cluster, ctx.elig, ctx.shapes, ctx.table
    live = FreeView(cl.gpus_free.copy(), cl.cpus_free.copy(), cl.mem_free.copy())
    pack_chain = FreeView(live.gpus.copy(), live.cpus.copy(), live.mem.copy())
    spread_chain = FreeView(live.gpus.copy(), live.cpus.copy(), live.mem.copy())
    out: list[list[Allocation]] = []
    greedy: list[Allocation | None] = []
    for r in rows:
        row, gpus = int(r), int(table.gpus[int(r)])
        found: list[Allocation] = []
        chained: Allocation | None = None
        seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()

        def add(a: Allocation | None, found: list[Allocation] = found,
                seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = seen) -> None:
            if a is not None and len(found) < max_candidates and key(a) not in seen:
                seen.add(key(a))
                found.append(a)

        if sh.feasible[row]:
            chained = allocate(cl, elig, sh, row, gpus, PlacementKind.PACK, pack_chain)
            if chained is not None:
                take(pack_chain, chained)
            spread = (allocate(cl, elig, sh, row, gpus, PlacementKind.SPREAD, spread_chain)
                      or allocate(cl, elig, sh, row, gpus, PlacementKind.PACK, spread_chain))
            if spread is not None:
                take(spread_chain, spread)
            add(chained)
            add(spread)
            add(allocate(cl, elig, sh, row, gpus, PlacementKind.PACK, live))
            add(allocate(cl, elig, sh, row, gpus, PlacementKind.SPREAD, live))
            allowed = candidate_nodes(cl, elig, sh, row, live).copy()
            while len(found) < max_candidates:
                for a in found:
                    allowed[a.nodes] = False
                alt = allocate(cl, elig, sh, row, gpus, PlacementKind.PACK, live, allowed)
                if alt is None:
                    break
                add(alt)
        out.append(found)
        greedy.append(chained)
    return Candidates(out, greedy)


def options(ctx: PlacementContext, rows: I64, cands: Candidates, keep: list[int]) -> list[Option]:
    """Exclusive/shared options of ``rows[i]`` for ``i`` in ``keep`` (see module docstring)."""
    cl, fx, table = ctx.cluster, ctx.effects, ctx.table
    idle = cl.jobs_on == 0
    out: list[Option] = []
    for j, i in enumerate(keep):
        row = int(rows[i])
        default = cands.greedy[i]
        gpu_seconds = float(table.gpus[row]) * max(float(table.time_limit[row]), 1.0)
        for a in cands.allocs[i]:
            nodes = a.nodes
            is_default = default is not None and key(default) == key(a)
            left = int((cl.gpus_free[nodes] - a.gpus)[idle[nodes]].sum())
            if bool(idle[nodes].all()):
                whole = Allocation(PlacementKind.SPREAD, nodes, a.gpus, a.cpus, a.mem)
                alone = (fx.factor(False, a.n_nodes) - 1.0) * gpu_seconds
                out.append(Option(job=j, row=row, alloc=whole, exclusive=True,
                                  reserve_gpus=cl.gpus_free[nodes].copy(),
                                  reserve_cpus=cl.cpus_free[nodes].copy(),
                                  reserve_mem=cl.mem_free[nodes].copy(),
                                  slowdown=alone, leftover=left, default=is_default))
            shared = Allocation(PlacementKind.PACK, nodes, a.gpus, a.cpus, a.mem)
            out.append(Option(job=j, row=row, alloc=shared, exclusive=False, reserve_gpus=a.gpus,
                              reserve_cpus=a.cpus, reserve_mem=a.mem,
                              slowdown=(fx.factor(True, a.n_nodes) - 1.0) * gpu_seconds, leftover=left,
                              default=is_default))
    return out
