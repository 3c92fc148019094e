"""What ``rltune evaluate`` says about the trace it cut its windows from: the requested-time model that
ran and the jobs dropped at load, by reason, in results.json, results.md and on stdout (tiny inputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rltune_daemon.cli.main import main
from rltune_daemon.evaluate import EvalConfig, evaluate


def _trace(tmp_path: Path, jobs: int = 400) -> Path:
    """A CSV trace for the testbed cluster without requested times: job 7 asks 64 GPUs (more than the
    13 there are), job 9 none (a CPU job in a GPU trace)."""
    rows = ["id,submit,runtime,gpus,partition"]
    for i in range(jobs):
        gpus = 64 if i == 7 else 0 if i == 9 else 1 + i % 2
        rows.append(f"j{i},{i * 60},{300 + (i * 37) % 900},{gpus},gpu")
    path = tmp_path / "jobs.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_evaluate_records_dropped_jobs_and_the_estimate_model(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "one.toml"
    conf.write_text("jobs = 1\n")
    out = tmp_path / "ev"
    assert main(["evaluate", "--trace", str(_trace(tmp_path)), "--cluster", "testbed", "--policies", "fcfs",
                 "--windows", "2", "--window-size", "32", "--config", str(conf), "--out", str(out)]) == 0
    line = ("requested times: user: modelled requests; jobs dropped at load: 2 of 400 jobs: cpu_only 1, "
            "infeasible 1")
    assert line in capsys.readouterr().out
    cfg = json.loads((out / "results.json").read_text())["config"]
    assert cfg["dropped_at_load"] == {"cpu_only": 1, "infeasible": 1} and cfg["jobs_loaded"] == 398
    assert cfg["estimates_used"] == "user" and cfg["estimates_note"] == "user: modelled requests"
    assert line + "." in (out / "results.md").read_text()


def test_evaluate_records_the_model_a_trace_picked_by_default(tmp_path: Path) -> None:
    """``estimates=None`` lets the trace choose: results name the model that ran and why, not "default"."""
    cfg = EvalConfig(str(_trace(tmp_path)), ("fcfs",), windows=1, window_size=32, estimates=None,
                     cluster="testbed", jobs=1)
    got = evaluate(cfg, progress=False)["config"]
    assert got["estimates_used"] == "user"
    note = "user: modelled requests; the default, as the trace records no requested times"
    assert got["estimates_note"] == note
