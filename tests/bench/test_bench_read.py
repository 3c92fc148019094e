"""``rltune bench read``: the read's parsing and the decision, timed on a generated queue."""

from __future__ import annotations

import json

import pytest

from rltune_daemon.cli.main import main


def test_bench_read_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "read", "--pending", "120", "--policies", "sjf", "--repeat", "1",
                 "--warm-cycles", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bench"] == "read" and out["pending"] == 120
    assert out["decide"]["sjf"]["planned"] > 0 and out["read"]


def test_bench_read_bad_size_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "read", "--pending", "0"]) != 0
    assert "--pending and --repeat must be positive" in capsys.readouterr().err
