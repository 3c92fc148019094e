"""Evaluation report helpers: window-by-window wins and the worst-wait aggregate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rltune_daemon.evaluate.report import size_table, window_wins, wins_table
from rltune_daemon.evaluate.runner import EvalConfig, aggregate


def _run(policy: str, window: int, bsld: float, wait: float, wait_max: float) -> dict[str, Any]:
    metrics = {"bsld": bsld, "wait_mean": wait, "wait_median": wait, "wait_p95": wait,
               "wait_p99": wait, "wait_max": wait_max,
               "jct_mean": wait, "utilization": 0.5, "utilization_arrival": 0.5, "makespan": 100.0}
    return {"policy": policy, "window": window, "metrics": metrics, "job_waits": [], "seconds": 0.1}


def _results() -> dict[str, Any]:
    sjf = [(2.0, 10.0, 50.0), (9.0, 90.0, 900.0), (3.0, 30.0, 40.0)]
    learned = [(1.0, 20.0, 60.0), (30.0, 80.0, 100.0), (2.0, 20.0, 30.0)]
    runs = [_run(name, k, *m) for name, ms in (("sjf", sjf), ("rltune:m", learned)) for k, m in enumerate(ms)]
    return aggregate(EvalConfig("testbed", ("sjf", "rltune:m"), windows=3), runs, 1.0, 1)


def test_window_wins_counts_each_window_not_the_mean() -> None:
    res = _results()
    # the learned policy's mean BSLD is worse (11.0 vs 4.67) but it wins two of three windows
    assert res["policies"]["rltune:m"]["bsld"] > res["policies"]["sjf"]["bsld"]
    assert window_wins(res, "rltune:m") == [("sjf", 2, 2, 3)]
    assert window_wins(res, "sjf") == [("rltune:m", 1, 1, 3)]
    assert "| `sjf` | 2/3 | 2/3 |" in wins_table(res, "rltune:m")


def test_wait_max_is_the_worst_window_not_the_mean() -> None:
    res = _results()
    assert res["policies"]["sjf"]["wait_max"] == 900.0
    assert res["policies"]["rltune:m"]["wait_max"] == 100.0
    assert res["policies"]["sjf"]["wait_mean"] == (10.0 + 90.0 + 30.0) / 3


def test_job_by_job_counts_jobs_that_waited_longer_than_under_multifactor() -> None:
    from rltune_daemon.evaluate.runner import job_by_job

    nan = float("nan")
    ref = [{"window": 0, "job_waits": [0.0, 100.0, 5000.0, 50.0, nan]},
           {"window": 1, "job_waits": [10.0, 10.0]}]
    mine = [{"window": 0, "job_waits": [900.0, 100.0, 1000.0, 50.0, 7.0]},  # +900 hurt, -4000 helped
            {"window": 1, "job_waits": [10.0, 700.0]}]  # +690 hurt
    got = job_by_job(mine, ref)
    assert got["jobs"] == 6  # the job that never ran under the reference is not compared
    assert got["hurt_pct"] == pytest.approx(100 * 2 / 6) and got["helped_pct"] == pytest.approx(100 / 6)
    assert got["worst_extra_wait"] == 900.0
    assert job_by_job(ref, ref) == {"jobs": 6, "hurt_pct": 0.0, "helped_pct": 0.0, "worst_extra_wait": 0.0}


def test_evaluation_with_multifactor_reports_hurt_jobs(tmp_path: Path) -> None:
    from rltune_daemon.evaluate.report import write_results
    from rltune_daemon.evaluate.runner import evaluate

    res = evaluate(EvalConfig("testbed", ("multifactor", "fcfs"), windows=2, window_size=100,
                              opts={"jobs": "2000"}, jobs=1), progress=False)
    fcfs = res["policies"]["fcfs"]["vs_multifactor"]
    assert fcfs["jobs"] == 200 and 0 <= fcfs["hurt_pct"] <= 100
    assert "vs_multifactor" not in res["policies"]["multifactor"]
    write_results(res, tmp_path, "rltune evaluate ...")
    md = (tmp_path / "results.md").read_text()
    assert "| `fcfs` | " in md and "jobs hurt" in md
    assert "job_waits" not in (tmp_path / "results.json").read_text()


def test_milp_fallbacks_are_counted_per_policy_and_reported(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Results count each policy's fallbacks and say so; a clean run has none (CBC's serial code, CPU-time
    limit: no 10-s stall, no timeout from load). CBC is then made to fail (mocked: a solver failure cannot
    be produced on demand)."""
    import json

    import pulp

    from rltune_daemon.evaluate.report import fallback_note, write_results
    from rltune_daemon.evaluate.runner import evaluate
    from rltune_daemon.placement import milp
    from rltune_daemon.placement.context import FALLBACK_REASONS

    cfg = EvalConfig("testbed", ("fcfs", "daemon:sjf"), windows=2, window_size=100, opts={"jobs": "2000"},
                     jobs=1)
    clean = evaluate(cfg, progress=False)
    assert clean["policies"]["daemon:sjf"]["milp_fallbacks"] == dict.fromkeys(FALLBACK_REASONS, 0)

    def broken(prob: object, opts: object) -> None:
        raise pulp.PulpSolverError("cbc crashed")

    monkeypatch.setattr(milp, "_solve_lp", broken)
    res = evaluate(cfg, progress=False)
    assert res["policies"]["fcfs"]["milp_fallbacks"] == dict.fromkeys(FALLBACK_REASONS, 0)
    failed = res["policies"]["daemon:sjf"]["milp_fallbacks"]["solver-error"]
    assert failed > 0
    note = fallback_note(res)
    assert note is not None and f"`daemon:sjf` {failed} solver-error" in note and "fcfs" not in note
    write_results(res, tmp_path, "rltune evaluate ...")
    assert note in (tmp_path / "results.md").read_text()
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["policies"]["daemon:sjf"]["milp_fallbacks"]["solver-error"] == failed


def test_size_table_counts_a_class_any_policy_ran() -> None:
    """Results merged from two runs: a class the first policy lacks keeps its job count and shows "-"."""
    res = {"policies": {"a": {"wait_by_size": {"1": {"jobs": 5, "wait_mean": 10.0}}},
                        "b": {"wait_by_size": {"1": {"jobs": 5, "wait_mean": 20.0},
                                               "2": {"jobs": 3, "wait_mean": 90.0}}}}}
    table = size_table(res, "GPUs")
    assert "| policy | 1 (5 jobs) | 2 (3 jobs) |" in table
    assert "| `a` | 10 | - |" in table and "| `b` | 20 | 90 |" in table
