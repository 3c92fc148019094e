"""``--split all``: windows from the whole trace, for a trace too short to hold a tail out (tiny inputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rltune_daemon.cli.main import main
from rltune_daemon.evaluate import heldout_windows
from rltune_daemon.policies import make_policy
from rltune_daemon.sim import simulate
from rltune_daemon.traces import load_workload


def test_all_draws_windows_from_the_whole_trace_and_keeps_it_as_history() -> None:
    w = load_workload("testbed", estimates="user", seed=0, jobs="300")
    history, wins = heldout_windows(w, 3, 64, 0, part="all")
    assert history.jobs == w.jobs
    assert len(wins) == 3 and all(len(win.jobs) == 64 for win in wins)
    for win in wins:
        start = win.meta["window_start"]
        assert win.jobs == w.jobs[start : start + 64]
    assert max(win.meta["window_start"] for win in wins) >= len(w.jobs) // 10  # not confined to the tail
    # the other parts are as they were: the held-out windows still come from the last 10 %
    _, held = heldout_windows(w, 1, 20, 0)
    assert {j.id for j in held[0].jobs} <= {j.id for j in w.jobs[270:]}


def test_short_trace_error_suggests_split_all_and_split_all_runs(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "small.toml"
    conf.write_text("jobs = 1\n\n[opts]\njobs = 300\n")
    args = ["evaluate", "--trace", "testbed", "--policies", "sjf", "--windows", "2", "--window-size", "48",
            "--config", str(conf)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: the held-out part (last 10%) has 30 jobs, fewer than --window-size 48: "
                          "use --split all (windows from the whole trace's 300 jobs, none held out)")
    out = tmp_path / "ev"
    assert main([*args, "--split", "all", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["config"]["split"] == "all"
    w = load_workload("testbed", estimates="user", seed=0, jobs="300")
    _, wins = heldout_windows(w, 2, 48, 0, part="all")
    direct = [simulate(win, make_policy("sjf")).metrics["bsld"] for win in wins]
    assert [pw["bsld"] for pw in res["policies"]["sjf"]["per_window"]] == pytest.approx(direct)
    assert "from the whole trace (nothing held out)" in (out / "results.md").read_text()
