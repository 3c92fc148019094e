"""The placement MILP: optimal (against brute force), jointly feasible, lexicographic in rank, never
worse than greedy, deterministic, and the objective terms pull the way the docs say."""

from __future__ import annotations

from functools import partial
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from placement_helpers import brute_force, check_jointly_feasible, context, instances, startable

from rltune_daemon.domain.cluster import NodeSpec
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.domain.jobs import Job
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.placement.context import PlacementContext, PlacementResult
from rltune_daemon.placement.greedy import greedy_placer
from rltune_daemon.placement.milp import (
    MilpOptions,
    build_problem,
    evaluate,
    make_milp_placer,
    milp_placer,
    solve,
)

# generous CBC limit: these tests check the model's answers, not its speed. (These tests once retried
# timeouts: CBC had reported "Stopped on time" on a 3-job instance within 10 s on a 2-core CI runner. That
# was CBC's threaded mode sitting idle for 10 s, which ``cbc_command`` no longer uses; see the test of its
# command line below.)
SOLVE_S = 10.0
OPTS = MilpOptions(time_limit=SOLVE_S, max_candidates=3)


def _placed_jobs(problem_rows: np.ndarray, rows: set[int]) -> tuple[bool, ...]:
    return tuple(int(r) in rows for r in problem_rows)


@settings(max_examples=40)
@given(instances(max_jobs=4))
def test_optimal_against_brute_force(ctx: PlacementContext) -> None:
    rows = startable(ctx)
    problem = build_problem(ctx, rows, OPTS)
    picked = solve(problem, OPTS)
    value = evaluate(problem, picked)
    best, arg = brute_force(problem)
    assert value is not None
    assert value == pytest.approx(best, abs=1e-4)
    # rank first: the placed set is the lexicographically largest one any selection reaches
    mine = _placed_jobs(problem.rows, {problem.options[i].row for i in picked})
    theirs = _placed_jobs(problem.rows, {problem.options[i].row for i in arg})
    assert mine == theirs


@settings(max_examples=40)
@given(instances(max_jobs=16, max_nodes=8))
def test_jointly_feasible_and_never_behind_greedy(ctx: PlacementContext) -> None:
    rows = startable(ctx)
    res = milp_placer(ctx, rows, time_limit=SOLVE_S)
    assert res.solver == "milp", res.fallback
    check_jointly_feasible(ctx, res.allocations)
    assert set(res.allocations) <= {int(r) for r in rows}
    greedy = greedy_placer(ctx, rows).allocations
    # lexicographically (in rank order) the MILP places at least what greedy places
    mine = [int(r) in res.allocations for r in rows]
    theirs = [int(r) in greedy for r in rows]
    assert mine >= theirs
    problem = build_problem(ctx, rows, MilpOptions())
    if mine == theirs:
        assert evaluate(problem, problem.start) is not None  # greedy is a feasible point of the model


def test_higher_rank_never_dropped_for_utilisation() -> None:
    """One idle 8-GPU node: rank 1 wants 4 GPUs, rank 2 wants 8. Occupancy alone would pick rank 2."""
    jobs = [Job("small", 0, 4, 3600.0), Job("big", 1, 8, 3600.0)]
    ctx = context([NodeSpec("n0", "a", 8, 32, 8000)], [], jobs)
    res = milp_placer(ctx, np.array([0, 1]), time_limit=SOLVE_S)
    assert res.solver == "milp" and set(res.allocations) == {0}
    # and in the other rank order the big job goes first
    res = milp_placer(ctx, np.array([1, 0]), time_limit=SOLVE_S)
    assert set(res.allocations) == {1}


def test_look_ahead_moves_a_flexible_job_out_of_the_way() -> None:
    """Best fit puts the any-type job on the 1-free type-a node, which the type-a job then lacks."""
    ctx = context([NodeSpec("n0", "a", 4, 16, 4000), NodeSpec("n1", "b", 4, 16, 4000)],
                  [("n0", 3, 3, 3000), ("n1", 2, 2, 2000)],
                  [Job("any", 0, 1, 3600.0), Job("needs-a", 1, 1, 3600.0, gpu_types=("a",))])
    rows = np.array([0, 1])
    assert set(greedy_placer(ctx, rows).allocations) == {0}
    res = milp_placer(ctx, rows, time_limit=SOLVE_S)
    assert res.solver == "milp" and set(res.allocations) == {0, 1}
    assert res.allocations[0].nodes.tolist() == [1] and res.allocations[1].nodes.tolist() == [0]
    check_jointly_feasible(ctx, res.allocations)


def _pack_or_spread(limit: float, effects: EffectsConfig) -> PlacementKind:
    """A 4-GPU job: a node with 5 GPUs free next to a running job, or an idle node; a 1-GPU job fits
    next to it either way."""
    ctx = context([NodeSpec("n0", "a", 8, 32, 8000), NodeSpec("n1", "a", 8, 32, 8000)], [("n0", 3, 3, 3000)],
                  [Job("j", 0, 4, limit), Job("k", 1, 1, 60.0)], effects)
    res = milp_placer(ctx, np.array([0, 1]), time_limit=SOLVE_S)
    assert res.solver == "milp"
    return PlacementKind.SPREAD if res.allocations[0].nodes.tolist() == [1] else PlacementKind.PACK


def test_slowdown_against_fragmentation() -> None:
    # short job: sharing n0 costs 0.1 x 4 GPUs x 10 min; stranding 4 GPUs of n1 for an hour costs more
    assert _pack_or_spread(600.0, EffectsConfig()) is PlacementKind.PACK
    # a month-long job loses far more to co-location than the stranded GPUs cost: it runs alone
    assert _pack_or_spread(30 * 86400.0, EffectsConfig()) is PlacementKind.SPREAD
    # without placement effects there is nothing to gain from spreading
    assert _pack_or_spread(30 * 86400.0, EffectsConfig.pure()) is PlacementKind.PACK


def test_exclusive_option_keeps_others_off() -> None:
    ctx = context([NodeSpec("n0", "a", 8, 32, 8000), NodeSpec("n1", "a", 8, 32, 8000)], [("n0", 4, 4, 4000)],
                  [Job("long", 0, 4, 30 * 86400.0), Job("s1", 1, 2, 600.0), Job("s2", 2, 2, 600.0)])
    res = milp_placer(ctx, np.array([0, 1, 2]), time_limit=SOLVE_S)
    assert res.allocations[0].kind is PlacementKind.SPREAD
    alone = set(res.allocations[0].nodes.tolist())
    assert all(not alone & set(a.nodes.tolist()) for r, a in res.allocations.items() if r != 0)
    assert set(res.allocations) == {0, 1, 2}


def test_deterministic() -> None:
    nodes = [NodeSpec(f"n{i}", "a", 8, 32, 8000) for i in range(12)]
    used = [(f"n{i}", i % 8, i % 8, 1000 * (i % 8)) for i in range(12)]
    jobs = [Job(f"j{k}", k, [1, 2, 4, 1, 8][k % 5], [600.0, 86400.0, 3600.0][k % 3]) for k in range(16)]
    ctx = context(nodes, used, jobs)
    rows = startable(ctx)
    runs = [milp_placer(ctx, rows, time_limit=SOLVE_S) for _ in range(3)]
    assert all(r.solver == "milp" for r in runs)
    keys = [{row: (a.kind, a.nodes.tolist(), a.gpus.tolist()) for row, a in r.allocations.items()}
            for r in runs]
    assert keys[0] == keys[1] == keys[2]


def test_beyond_max_jobs_placed_greedily_after_the_milp() -> None:
    nodes = [NodeSpec(f"n{i}", "a", 4, 16, 4000) for i in range(4)]
    jobs = [Job(f"j{k}", k, 1, 3600.0) for k in range(10)]
    ctx = context(nodes, [], jobs)
    res = milp_placer(ctx, np.arange(10), max_jobs=3, time_limit=SOLVE_S)
    assert res.solver == "milp" and set(res.allocations) == set(range(10))
    check_jointly_feasible(ctx, res.allocations)


def test_make_milp_placer() -> None:
    placer = make_milp_placer(time_limit=1.0, max_candidates=2)
    ctx = context([NodeSpec("n0", "a", 8, 32, 8000)], [], [Job("a", 0, 2, 60.0), Job("b", 1, 2, 60.0)])
    assert set(placer(ctx, np.array([0, 1])).allocations) == {0, 1}
    with pytest.raises(TypeError):
        make_milp_placer(time_limt=1.0)
    empty = milp_placer(ctx, np.array([], dtype=np.int64), time_limit=SOLVE_S)
    assert empty.allocations == {} and empty.solver == "milp"


def _daemon_placer(ctx: PlacementContext, rows: np.ndarray) -> PlacementResult:
    from rltune_daemon.service.policy import CountingPlacer

    return CountingPlacer("milp", 0.5)(ctx, rows)


@pytest.mark.parametrize(("placer", "flags"), [
    # the simulator's default: CBC's serial code (no -threads), CPU seconds (runs independent of load)
    (partial(milp_placer, time_limit=SOLVE_S), {"-sec": str(SOLVE_S), "-timeMode": "cpu"}),
    (partial(milp_placer, time_limit=SOLVE_S, threads=2), {"-threads": "2", "-timeMode": "cpu"}),
    # the daemon: a live decision has a deadline, so CBC counts wall-clock seconds
    (_daemon_placer, {"-sec": "0.5", "-timeMode": "elapsed"}),
])
def test_cbc_command_line(monkeypatch: pytest.MonkeyPatch, placer: Any, flags: dict[str, str]) -> None:
    """What CBC is really started with. ``-threads 1`` would run CBC 2.10.3's threaded search with one
    worker, which sat idle for exactly 10 s in a few solves in a thousand (docs/placement.md)."""
    import subprocess

    real = subprocess.Popen
    argvs: list[list[str]] = []

    def spy(args: list[str], *a: Any, **kw: Any) -> Any:
        argvs.append([str(x) for x in args])
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", spy)
    res = placer(_two_job_context(), np.array([0, 1]))
    assert res.solver == "milp" and not res.fallback and not res.reason and set(res.allocations) == {0, 1}
    (argv,) = argvs
    given = dict(pairwise(argv))
    assert {k: given.get(k) for k in flags} == flags
    if "-threads" not in flags:
        assert "-threads" not in argv


def _two_job_context() -> PlacementContext:
    nodes = [NodeSpec("n0", "a", 8, 32, 8000), NodeSpec("n1", "a", 8, 32, 8000)]
    return context(nodes, [], [Job("a", 0, 4, 3600.0), Job("b", 1, 8, 3600.0)])


@pytest.mark.parametrize(("failure", "reason"), [
    ("raise", "solver-error"),
    ("not-solved", "timeout"),
    ("infeasible", "infeasible"),
])
def test_solver_failure_falls_back_to_greedy_and_is_counted(monkeypatch: pytest.MonkeyPatch, failure: str,
                                                            reason: str) -> None:
    import pulp

    from rltune_daemon.placement import milp

    def broken(prob: pulp.LpProblem, opts: MilpOptions) -> None:
        if failure == "raise":
            raise pulp.PulpSolverError("cbc exploded")
        prob.status = pulp.LpStatusNotSolved if failure == "not-solved" else pulp.LpStatusInfeasible
        prob.sol_status = pulp.LpSolutionNoSolutionFound

    ctx = _two_job_context()
    rows = np.array([0, 1])
    want = greedy_placer(ctx, rows)
    milp.reset_fallback_counts()
    monkeypatch.setattr(milp, "_solve_lp", broken)
    res = milp_placer(ctx, rows, time_limit=SOLVE_S)
    assert res.solver == "greedy" and res.reason == reason and res.fallback.startswith(reason)
    assert {r: a.nodes.tolist() for r, a in res.allocations.items()} == \
        {r: a.nodes.tolist() for r, a in want.allocations.items()}
    assert milp.fallback_counts()[reason] == 1
    assert sum(milp.fallback_counts().values()) == 1


def test_inconsistent_solution_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A solver answer that breaks the model (here: every option chosen) is caught, not applied."""
    from rltune_daemon.placement import milp

    monkeypatch.setattr(milp, "solve", lambda problem, opts: list(range(len(problem.options))))
    milp.reset_fallback_counts()
    res = milp_placer(_two_job_context(), np.array([0, 1]), time_limit=SOLVE_S)
    assert res.solver == "greedy" and res.reason == "inconsistent"
    assert milp.fallback_counts()["inconsistent"] == 1


def _temp_into(monkeypatch: pytest.MonkeyPatch, path: Any) -> None:
    """Every temporary file (Python's and PuLP's own choice, read from TMPDIR/TMP) goes to ``path``."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(path))
    monkeypatch.setenv("TMPDIR", str(path))
    monkeypatch.setenv("TMP", str(path))


@pytest.mark.parametrize("cbc", ["/bin/false", "/bin/true"])
def test_failed_cbc_leaves_no_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, cbc: str) -> None:
    """A real CBC run that fails (non-zero exit; exit 0 without a solution file) falls back to greedy and
    leaves nothing in the temporary directory: PuLP only cleans up after a success, and the daemon
    solves every minute for months."""
    import pulp

    from rltune_daemon.placement import milp

    _temp_into(monkeypatch, tmp_path)
    monkeypatch.setattr(pulp.PULP_CBC_CMD, "pulp_cbc_path", cbc)
    milp.reset_fallback_counts()
    res = milp_placer(_two_job_context(), np.array([0, 1]), time_limit=SOLVE_S)
    assert res.solver == "greedy" and res.reason == "solver-error"
    assert milp.fallback_counts()["solver-error"] == 1
    assert list(tmp_path.iterdir()) == []


def test_successful_solve_leaves_no_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    _temp_into(monkeypatch, tmp_path)
    res = milp_placer(_two_job_context(), np.array([0, 1]), time_limit=SOLVE_S)
    assert res.solver == "milp"
    assert list(tmp_path.iterdir()) == []


def test_unwritable_temporary_directory_falls_back_to_greedy(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Any) -> None:
    """CBC needs files; with no usable temporary directory the placement is greedy's and counted, not an
    exception that would cost the daemon its whole cycle."""
    from rltune_daemon.placement import milp

    _temp_into(monkeypatch, tmp_path / "gone")
    milp.reset_fallback_counts()
    res = milp_placer(_two_job_context(), np.array([0, 1]), time_limit=SOLVE_S)
    assert res.solver == "greedy" and res.reason == "solver-error"
    assert milp.fallback_counts()["solver-error"] == 1
