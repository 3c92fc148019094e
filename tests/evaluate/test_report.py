"""Evaluation report helpers: window-by-window wins and the worst-wait aggregate."""

from __future__ import annotations

from typing import Any

from rltune_daemon.evaluate.report import window_wins, wins_table
from rltune_daemon.evaluate.runner import EvalConfig, aggregate


def _run(policy: str, window: int, bsld: float, wait: float, wait_max: float) -> dict[str, Any]:
    metrics = {"bsld": bsld, "wait_mean": wait, "wait_median": wait, "wait_p95": wait, "wait_max": wait_max,
               "jct_mean": wait, "utilization": 0.5, "makespan": 100.0}
    return {"policy": policy, "window": window, "metrics": metrics, "waits": [], "seconds": 0.1}


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
