"""Placement MILP for the top-K ranked jobs (paper §3.2 "Allocation Optimization Module", Algorithm 1;
design §5), solved with PuLP + CBC, with the greedy placer as the fallback.

Options ``o`` come from ``candidates`` (node sets per job, each as an exclusive and/or a shared
option); ``j(o)`` is the job's position in rank order (0 = highest) among the ``J`` jobs with options.

* ``x_o`` binary: start job ``j(o)`` with option ``o``; at most one option per job (exactly one when
  the greedy chain starts every job, since the rank term is then settled).
* per node: the GPUs, CPUs and memory the chosen options reserve there <= free now (an exclusive
  option reserves its nodes whole, which is how it keeps other top-K jobs off them).
* maximise ``sum_o x_o (V_j(o) + s_o / Z)`` with
  ``V_j = 2^(J+1-j)``: lexicographic rank value: a job outweighs all lower-ranked jobs together plus
  the whole secondary term, so a higher-ranked job is never dropped for lower-ranked ones;
  ``s_o = H g_o - slow_o - H w_o leftover_o + b [o is the greedy allocation]``: occupied GPUs over the
  fragmentation horizon ``H``, minus the expected slowdown (``effects.factor`` x GPUs x requested
  seconds, the simulator's model), minus the GPUs the option leaves free on idle nodes (stranded by an
  exclusive option, ``w = 1``; broken up by a shared one, ``w = break_weight``), plus a small bonus ``b``
  that keeps Slurm's own choice when nothing else differs; ``Z`` scales ``s`` into (-1, 1).

Every term is per option, so the model is an assignment problem with knapsack rows (no fixed charges):
an earlier form with per-node "touched"/"exclusive" binaries needed 0.1 s to minutes in CBC for K=16
(docs/placement.md). Jobs beyond ``max_jobs`` are placed greedily on what the MILP leaves. On timeout,
infeasibility, solver error or an inconsistent solution the greedy placer's result is returned with
``solver="greedy"``, ``reason`` and ``fallback="<reason>: <detail>"``; fallbacks are counted by reason in this
process (``fallback_counts()``, for benchmarks and tests; the daemon counts its own in
``service.policy.CountingPlacer``).
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
import pulp

from rltune_daemon.domain.arrays import F64, I64
from rltune_daemon.placement.allocate import FreeView
from rltune_daemon.placement.candidates import Option, candidate_allocations, options
from rltune_daemon.placement.context import FALLBACK_REASONS, PlacementContext, PlacementResult, Placer
from rltune_daemon.placement.greedy import greedy_fill, greedy_placer
from rltune_daemon.placement.verify import joint_violation

SEED = 1  # CBC randomSeed / randomCbcSeed: same model, same answer
# CBC's primal heuristics (feasibility pump, RINS, ...) took 0.03-1.6 s on some K=16 instances whose LP
# relaxation is nearly integral anyway; branch and bound alone closes them in ~10-20 ms.
CBC_FLAGS = ("heuristics off",)

TimeMode = Literal["cpu", "elapsed"]

_lock = threading.Lock()
_fallbacks: Counter[str] = Counter()


def fallback_counts() -> dict[str, int]:
    """Fallbacks to the greedy placer since start (or the last reset), by reason."""
    with _lock:
        return {r: _fallbacks[r] for r in FALLBACK_REASONS}


def reset_fallback_counts() -> None:
    with _lock:
        _fallbacks.clear()


def _count(reason: str) -> None:
    with _lock:
        _fallbacks[reason] += 1


@dataclass(frozen=True, kw_only=True)
class MilpOptions:
    """``time_limit``: CBC seconds (process start excluded), counted as ``time_mode`` says: ``cpu`` (the
    default: the simulator's runs do not depend on the machine's load) or ``elapsed`` (the daemon: a
    decision has a real deadline). ``threads``: 1 runs CBC's serial code (see ``cbc_command``); more
    turns on its threaded search. ``max_candidates``: node sets per
    job. ``max_jobs``: jobs given to the MILP (the rest are placed greedily after it; lexicographic
    weights stay far inside double precision up to 24). ``frag_horizon_s``: how long a GPU left free on
    a broken-up idle node is assumed to stay unusable; it converts GPUs into the GPU-seconds of the
    slowdown term. ``break_weight``: that cost for a shared option (others may still fill the node)
    relative to an exclusive one. ``tie_bonus_s``: GPU-seconds in favour of the greedy allocation."""

    time_limit: float = 0.05
    threads: int = 1
    time_mode: TimeMode = "cpu"
    max_candidates: int = 6
    max_jobs: int = 24
    frag_horizon_s: float = 3600.0
    break_weight: float = 0.5
    tie_bonus_s: float = 60.0


@dataclass(frozen=True)
class Problem:
    """A placement instance in solver-independent form. ``coef[o]`` is option ``o``'s objective value;
    ``evaluate`` scores any selection (the tests check the solver against brute force with it)."""

    rows: I64  # jobs with at least one option, rank order
    options: tuple[Option, ...]
    coef: F64
    free: FreeView
    all_placed: bool  # the greedy chain starts every job: the rank term is constant, jobs are "= 1"
    start: tuple[int, ...]  # option indices of the greedy solution (always feasible)


def build_problem(ctx: PlacementContext, rows: I64, opts: MilpOptions) -> Problem:
    cands = candidate_allocations(ctx, rows, opts.max_candidates)
    keep = [i for i, c in enumerate(cands.allocs) if c]
    jobs = rows[keep]
    opts_list = options(ctx, rows, cands, keep)
    n_jobs = len(jobs)
    all_placed = all(cands.greedy[i] is not None for i in keep)
    weight = np.zeros(n_jobs) if all_placed else np.array(
        [2.0 ** (n_jobs + 1 - j) for j in range(n_jobs)], dtype=np.float64)
    h = opts.frag_horizon_s
    gpus = np.array([float(ctx.table.gpus[int(r)]) for r in jobs])
    cost = np.array([o.slowdown + h * o.leftover * (1.0 if o.exclusive else opts.break_weight)
                     for o in opts_list])
    worst = np.zeros(n_jobs)
    for o, c in zip(opts_list, cost, strict=True):
        worst[o.job] = max(worst[o.job], c)
    z = h * float(gpus.sum()) + float(worst.sum()) + opts.tie_bonus_s * n_jobs + 1.0
    coef = np.array([weight[o.job] + (h * gpus[o.job] - c + opts.tie_bonus_s * o.default) / z
                     for o, c in zip(opts_list, cost, strict=True)], dtype=np.float64)
    cl = ctx.cluster
    free = FreeView(cl.gpus_free.copy(), cl.cpus_free.copy(), cl.mem_free.copy())
    start = _greedy_start(opts_list)
    return Problem(jobs, tuple(opts_list), coef, free, all_placed, start)


def _greedy_start(opts: list[Option]) -> tuple[int, ...]:
    """The greedy solution as option indices (every greedy-placed job's shared default option)."""
    return tuple(i for i, o in enumerate(opts) if o.default and not o.exclusive)


def _usage(problem: Problem, chosen: Sequence[int]) -> FreeView:
    fv = FreeView(problem.free.gpus.copy(), problem.free.cpus.copy(), problem.free.mem.copy())
    for i in chosen:
        o = problem.options[i]
        np.subtract.at(fv.gpus, o.alloc.nodes, o.reserve_gpus)
        np.subtract.at(fv.cpus, o.alloc.nodes, o.reserve_cpus)
        np.subtract.at(fv.mem, o.alloc.nodes, o.reserve_mem)
    return fv


def evaluate(problem: Problem, chosen: Sequence[int]) -> float | None:
    """Objective of selecting options ``chosen``, or None if that selection is infeasible."""
    jobs = [problem.options[i].job for i in chosen]
    if len(set(jobs)) != len(jobs) or (problem.all_placed and len(jobs) != len(problem.rows)):
        return None
    fv = _usage(problem, chosen)
    if (fv.gpus < 0).any() or (fv.cpus < 0).any() or (fv.mem < 0).any():
        return None
    return float(sum(problem.coef[i] for i in chosen))


def _model(problem: Problem) -> tuple[pulp.LpProblem, list[pulp.LpVariable]]:
    prob = pulp.LpProblem("placement", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{i}", cat=pulp.LpBinary) for i in range(len(problem.options))]
    by_job: dict[int, list[int]] = {}
    on_node: dict[int, list[tuple[int, int, int, int]]] = {}
    for i, o in enumerate(problem.options):
        by_job.setdefault(o.job, []).append(i)
        for n, g, c, m in zip(o.alloc.nodes, o.reserve_gpus, o.reserve_cpus, o.reserve_mem, strict=True):
            on_node.setdefault(int(n), []).append((i, int(g), int(c), int(m)))
    for members in by_job.values():
        row = pulp.LpAffineExpression([(x[i], 1.0) for i in members])
        prob += (row == 1) if problem.all_placed else (row <= 1)
    free = problem.free
    for n in sorted(on_node):
        uses = on_node[n]
        for col, cap in ((1, int(free.gpus[n])), (2, int(free.cpus[n])), (3, int(free.mem[n]))):
            worst: dict[int, int] = {}
            for u in uses:
                job = problem.options[u[0]].job
                worst[job] = max(worst.get(job, 0), u[col])
            if sum(worst.values()) > cap:  # rows that can never bind are left out
                prob += pulp.LpAffineExpression([(x[u[0]], float(u[col])) for u in uses if u[col]]) <= cap
    prob += pulp.LpAffineExpression([(v, float(c)) for v, c in zip(x, problem.coef, strict=True)])
    return prob, x


def cbc_command(opts: MilpOptions) -> pulp.PULP_CBC_CMD:
    """The CBC call for ``opts``. One thread means no ``threads`` option at all: CBC 2.10.3's
    ``-threads 1`` starts its threaded search with one worker, and there a few solves in a thousand
    (instances closed at the root in ~5 ms) sat idle for exactly 10 s with zero CPU, then stopped "on
    time limit" and fell back to greedy (docs/placement.md; CBC's threaded mode is known to hang on
    locks: coin-or/Cbc#640). The serial code had no such stall on the same instances. No MIP start:
    CBC 2.10.3 was seen to return a given start as "optimal" when a better solution existed."""
    return pulp.PULP_CBC_CMD(msg=False, timeLimit=opts.time_limit, timeMode=opts.time_mode,
                             threads=opts.threads if opts.threads > 1 else None,
                             options=[f"randomSeed {SEED}", f"randomCbcSeed {SEED}", *CBC_FLAGS])


def _solve_lp(prob: pulp.LpProblem, opts: MilpOptions) -> None:
    """Run CBC (a hook the tests replace to simulate solver failures). CBC reads and writes files;
    PuLP deletes them only when CBC succeeds, so a daemon that solves every minute would leak one
    ``.mps`` per failed solve into /tmp. A directory per solve is removed whatever happens."""
    solver = cbc_command(opts)
    with tempfile.TemporaryDirectory(prefix="rltune-cbc-") as scratch:
        solver.tmpDir = scratch
        prob.solve(solver)


class SolveError(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def solve(problem: Problem, opts: MilpOptions) -> list[int]:
    """Indices of the chosen options (proven optimal), or ``SolveError``."""
    if not problem.options:
        return []
    if len(problem.rows) == 1:  # one job: its best option is the optimum, no solver needed
        return [int(np.argmax(problem.coef))]
    prob, x = _model(problem)
    t0 = time.perf_counter()
    try:
        _solve_lp(prob, opts)
    except (pulp.PulpSolverError, OSError) as err:  # OSError: no writable temporary directory, no CBC binary
        raise SolveError("solver-error", str(err) or type(err).__name__) from err
    spent = time.perf_counter() - t0
    status, sol = int(prob.status), int(prob.sol_status)
    if status == pulp.LpStatusOptimal and sol == pulp.LpSolutionOptimal:
        return [i for i, v in enumerate(x) if (v.value() or 0.0) > 0.5]
    # The model always has a feasible point (nothing placed, or the greedy solution), so CBC's "Integer
    # infeasible" only means it stopped before finding one: on the clock, that is a timeout.
    if status in (pulp.LpStatusOptimal, pulp.LpStatusNotSolved) or (
            status == pulp.LpStatusInfeasible and spent >= opts.time_limit):
        raise SolveError("timeout", f"no proven optimum within {opts.time_limit}s {opts.time_mode} "
                                    f"(CBC: {pulp.LpStatus.get(status, status)}, "
                                    f"{pulp.LpSolution.get(sol, sol)})")
    if status == pulp.LpStatusInfeasible:
        raise SolveError("infeasible", "CBC reports the model infeasible")
    raise SolveError("solver-error", f"CBC status {pulp.LpStatus.get(status, status)}")


def _fallback(ctx: PlacementContext, rows: I64, reason: str, detail: str, t0: float) -> PlacementResult:
    _count(reason)
    res = greedy_placer(ctx, rows)
    return PlacementResult(res.allocations, "greedy", f"{reason}: {detail}", time.perf_counter() - t0, reason)


def milp_placer(ctx: PlacementContext, rows: I64, *, time_limit: float = 0.05, threads: int = 1,
                time_mode: TimeMode = "cpu", max_candidates: int = 6, max_jobs: int = 24,
                frag_horizon_s: float = 3600.0, break_weight: float = 0.5,
                tie_bonus_s: float = 60.0) -> PlacementResult:
    """Allocations for the ranked ``rows`` (rank order) that can start now, jointly feasible."""
    t0 = time.perf_counter()
    opts = MilpOptions(time_limit=time_limit, threads=threads, time_mode=time_mode,
                       max_candidates=max_candidates, max_jobs=max_jobs, frag_horizon_s=frag_horizon_s,
                       break_weight=break_weight, tie_bonus_s=tie_bonus_s)
    head, tail = rows[:max_jobs], rows[max_jobs:]
    problem = build_problem(ctx, head, opts)
    try:
        picked = solve(problem, opts)
    except SolveError as err:
        return _fallback(ctx, rows, err.reason, err.detail, t0)
    if evaluate(problem, picked) is None:
        return _fallback(ctx, rows, "inconsistent", "solution violates the model", t0)
    chosen = {problem.options[i].row: problem.options[i].alloc for i in picked}
    greedy_fill(ctx, tail, _usage(problem, picked), chosen)  # jobs past max_jobs: best fit on what is left
    bad = joint_violation(ctx, chosen)
    if bad:
        return _fallback(ctx, rows, "inconsistent", bad, t0)
    return PlacementResult(chosen, "milp", "", time.perf_counter() - t0)


def make_milp_placer(**opts: Any) -> Placer:
    """A ``Placer`` with fixed options, e.g. ``make_milp_placer(time_limit=0.1)``."""
    MilpOptions(**opts)  # reject unknown options now, not at the first decision
    placer: Placer = partial(milp_placer, **opts)
    return placer
