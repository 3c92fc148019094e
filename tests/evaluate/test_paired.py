"""Paired comparison with a tie band (``rltune compare``): the verdicts, and refusals of results that
were not evaluated on the same windows."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from rltune_daemon.cli.main import main
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.paired import load_side, overall, paired_diffs
from rltune_daemon.evaluate.runner import EvalConfig, aggregate


def _run(policy: str, window: int, bsld: float, wait: float) -> dict[str, Any]:
    metrics = {"bsld": bsld, "wait_mean": wait, "wait_median": wait, "wait_p95": wait,
               "wait_p99": wait, "wait_max": wait,
               "jct_mean": wait, "utilization": 0.5, "utilization_arrival": 0.5, "makespan": 100.0}
    return {"policy": policy, "window": window, "metrics": metrics, "job_waits": [], "seconds": 0.1}


def _write(path: Path, per_policy: dict[str, list[tuple[float, float]]], **cfg: Any) -> Path:
    runs = [_run(name, k, b, w) for name, ms in per_policy.items() for k, (b, w) in enumerate(ms)]
    n = len(next(iter(per_policy.values())))
    config = EvalConfig(cfg.pop("trace", "testbed"), tuple(per_policy), windows=n, **cfg)
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps(aggregate(config, runs, 1.0, 1)))
    return path


def test_a_small_lead_in_every_window_counts_and_a_big_one_from_one_window_does_not(tmp_path: Path) -> None:
    base = [(5.0, 100.0), (6.0, 200.0), (7.0, 300.0), (8.0, 400.0)]
    steady = [(b - 0.1, w + (1.0 if k % 2 else -1.0)) for k, (b, w) in enumerate(base)]  # 0.1 lower, each
    lucky = [(b - (2.0 if k == 0 else 0.0), w) for k, (b, w) in enumerate(base)]  # 0.5 lower on average
    d = _write(tmp_path / "r", {"base": base, "steady": steady, "lucky": lucky})
    steady_vs = paired_diffs(load_side(f"{d}#steady"), load_side(f"{d}#base"))
    assert [(x.metric, x.verdict) for x in steady_vs] == [("bsld", "lower"), ("wait_mean", "tie")]
    assert steady_vs[0].se == 0.0 and math.isclose(steady_vs[0].diff, -0.1)
    assert overall(steady_vs) == "better"
    lucky_vs = paired_diffs(load_side(f"{d}#lucky"), load_side(f"{d}#base"))
    assert lucky_vs[0].diff == -0.5 and math.isclose(lucky_vs[0].se, 0.5)  # sd 1.0 / sqrt(4)
    assert lucky_vs[0].verdict == "tie" and overall(lucky_vs) == "tie"
    # a looser band lets the one-window lead through; the verdict is about the band, not the means
    assert paired_diffs(load_side(f"{d}#lucky"), load_side(f"{d}#base"), sigma=0.5)[0].verdict == "lower"
    reverse = paired_diffs(load_side(f"{d}#base"), load_side(f"{d}#steady"))
    assert overall(reverse) == "worse"


def test_overall_names_a_trade_off() -> None:
    from rltune_daemon.evaluate.paired import PairedDiff

    diffs = [PairedDiff("bsld", 1, 2, -1, 0.1, "lower"), PairedDiff("wait_mean", 2, 1, 1, 0.1, "higher")]
    assert overall(diffs) == "trade-off"


def test_results_from_other_windows_are_refused(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", {"x": [(1.0, 1.0), (2.0, 2.0)]})
    other_seed = _write(tmp_path / "b", {"y": [(1.0, 1.0), (2.0, 2.0)]}, seed=1)
    other_trace = _write(tmp_path / "c", {"y": [(1.0, 1.0), (2.0, 2.0)]}, trace="philly")
    with pytest.raises(UserError, match="differ in seed"):
        paired_diffs(load_side(str(a)), load_side(str(other_seed)))
    with pytest.raises(UserError, match="differ in trace"):
        paired_diffs(load_side(str(a)), load_side(str(other_trace)))
    two = _write(tmp_path / "d", {"x": [(1.0, 1.0)], "y": [(1.0, 1.0)]})
    with pytest.raises(UserError, match="name one"):
        load_side(str(two))
    with pytest.raises(UserError, match="no policy 'z'"):
        load_side(f"{two}#z")
    with pytest.raises(UserError, match="at least 2 windows"):
        paired_diffs(load_side(f"{two}#x"), load_side(f"{two}#y"))
    with pytest.raises(UserError, match="metric 'nope'"):
        paired_diffs(load_side(str(a)), load_side(str(a)), metrics=("nope",))


def test_compare_cli_prints_the_verdict_and_refuses_in_one_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    d = _write(tmp_path / "r", {"new": [(1.0, 10.0), (2.0, 20.0), (3.0, 30.0)],
                                "old": [(2.0, 10.0), (3.0, 21.0), (4.0, 29.0)]})
    assert main(["compare", f"{d}#new", f"{d}/results.json#old"]) == 0
    out = capsys.readouterr().out
    assert "bsld" in out and "verdict: A is better than B" in out
    assert main(["compare", f"{d}#new", f"{d}#old", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["verdict"] == "better" and got["windows"] == 3
    assert [m["verdict"] for m in got["metrics"]] == ["lower", "tie"]
    assert main(["compare", str(tmp_path / "missing"), f"{d}#old"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "no such file" in err
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["compare", str(tmp_path / "bad.json"), f"{d}#old"]) == 2
    assert "not an 'rltune evaluate' results.json" in capsys.readouterr().err
    assert main(["compare", f"{d}#new", f"{d}#old", "--sigma", "0"]) == 2


def test_relative_differences_let_every_window_weigh_alike(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A 10 % lead in every window but one congested window where A is 2 % behind: the absolute mean
    difference is decided by that window (a tie), the relative one sees the steady lead (lower)."""
    old = [(2.0, 100.0), (2.0, 100.0), (2.0, 100.0), (2.0, 100.0), (50.0, 100.0)]
    new = [(1.8, 100.0), (1.8, 100.0), (1.8, 100.0), (1.8, 100.0), (51.0, 100.0)]
    d = _write(tmp_path / "r", {"new": new, "old": old})
    absolute = paired_diffs(load_side(f"{d}#new"), load_side(f"{d}#old"))
    assert math.isclose(absolute[0].diff, 0.04) and absolute[0].verdict == "tie"
    rel = paired_diffs(load_side(f"{d}#new"), load_side(f"{d}#old"), relative=True)
    assert math.isclose(rel[0].diff, (4 * -0.1 + 0.02) / 5) and rel[0].verdict == "lower"
    assert rel[1].diff == 0.0 and rel[1].verdict == "tie" and overall(rel) == "better"
    assert main(["compare", f"{d}#new", f"{d}#old", "--relative"]) == 0
    out = capsys.readouterr().out
    assert "(A - B) / B" in out and "-7.60%" in out and "verdict: A is better than B" in out
    zero = _write(tmp_path / "z", {"new": [(1.0, 5.0), (1.0, 0.0)], "old": [(1.0, 0.0), (1.0, 0.0)]})
    with pytest.raises(UserError, match="B's wait_mean is 0"):
        paired_diffs(load_side(f"{zero}#new"), load_side(f"{zero}#old"), relative=True)
    both_zero = paired_diffs(load_side(f"{zero}#old"), load_side(f"{zero}#old"), relative=True)
    assert [x.diff for x in both_zero] == [0.0, 0.0]


def test_busiest_keeps_the_windows_where_the_reference_queues_most(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A is ahead in the congested windows and behind in the quiet ones: on all windows a tie, on the two
    where the reference has the highest BSLD it is lower; the reference's ranking, not A's or B's, picks."""
    ref = [(1.0, 10.0), (30.0, 10.0), (1.5, 10.0), (20.0, 10.0)]
    old = [(1.0, 10.0), (30.0, 10.0), (1.0, 10.0), (20.0, 10.0)]
    new = [(2.0, 10.0), (28.9, 10.0), (2.0, 10.0), (19.0, 10.0)]
    d = _write(tmp_path / "r", {"new": new, "old": old, "ref": ref})
    a, b, by = load_side(f"{d}#new"), load_side(f"{d}#old"), load_side(f"{d}#ref")
    from rltune_daemon.evaluate.paired import busiest

    assert busiest(by, [0, 1, 2, 3], 2) == [1, 3] and busiest(by, [0, 1, 2, 3], 3) == [1, 2, 3]
    assert paired_diffs(a, b)[0].verdict == "tie"
    picked = paired_diffs(a, b, busiest_by=(by, 2))
    assert math.isclose(picked[0].diff, -1.05) and picked[0].verdict == "lower"
    assert math.isclose(picked[0].a, (28.9 + 19.0) / 2)
    with pytest.raises(UserError, match="--busiest 5: expected 2 to 4"):
        paired_diffs(a, b, busiest_by=(by, 5))
    other = _write(tmp_path / "o", {"ref": ref}, seed=3)
    with pytest.raises(UserError, match="differ in seed"):
        paired_diffs(a, b, busiest_by=(load_side(str(other)), 2))
    assert main(["compare", f"{d}#new", f"{d}#old", "--busiest", "2", "--by", f"{d}#ref"]) == 0
    out = capsys.readouterr().out
    assert "the 2 of 4 windows where ref has the highest BSLD" in out and "verdict: A is better" in out
    assert main(["compare", f"{d}#new", f"{d}#old", "--by", f"{d}#ref"]) == 2
    assert "give --busiest too" in capsys.readouterr().err
