"""``rltune bench state``: a save after a cycle writes only the jobs that cycle changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rltune_daemon.bench.state import time_saves
from rltune_daemon.cli.main import main


def test_bench_state_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "state", "--jobs", "300", "--changed", "7", "--repeats", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bench"] == "state" and out["jobs"] == 300 and out["changed"] == 7
    assert out["rows_per_save"] == 7  # the journal writes what changed, not the 300 records
    assert out["min_s"] <= out["median_s"] <= out["max_s"]


def test_time_saves_never_touches_an_existing_record(tmp_path: Path) -> None:
    time_saves(tmp_path / "state.db", jobs=10, changed=2, repeats=1)
    with pytest.raises(Exception, match="exists"):
        time_saves(tmp_path / "state.db", jobs=10, changed=2, repeats=1)


def test_bench_state_bad_sizes_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "state", "--jobs", "5", "--changed", "6"]) != 0
    assert "--changed at most --jobs" in capsys.readouterr().err
