"""Residual models (manifest ``reach`` > 0: an actor that corrected its base policy's order by fewer than
``reach`` places) are no longer run: loading one is a one-line refusal that says to retrain it, and the
daemon falls back to its base policy with that line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rltune_daemon.cli.main import main
from rltune_daemon.errors import UserError
from rltune_daemon.policies.learned import load_learned
from rltune_daemon.service.policy import choose_policy

ROOT = Path(__file__).resolve().parents[2]
RESIDUAL = sorted(p.parent for p in (ROOT / "docs/results").glob("**/manifest.json")
                  if '"reach": 8' in p.read_text())


def test_the_recorded_residual_models_are_found() -> None:
    assert len(RESIDUAL) >= 6


@pytest.mark.parametrize("path", RESIDUAL, ids=[str(p.relative_to(ROOT)) for p in RESIDUAL])
def test_a_residual_model_is_refused_in_one_line(path: Path) -> None:
    with pytest.raises(UserError) as info:
        load_learned(path)
    assert str(info.value) == (f"model {path} is a residual model (reach 8), which this version no longer "
                               "runs: retrain it")


def test_the_daemon_falls_back_from_a_residual_model() -> None:
    choice = choose_policy(str(RESIDUAL[0]), "sjf")
    assert choice.policy.name == "sjf" and choice.fallback_kind == "unusable"
    assert "is a residual model (reach 8)" in choice.fallback


def test_evaluate_refuses_a_residual_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--trace", "testbed", "--policies", f"rltune:{RESIDUAL[0]}", "--windows", "1",
                 "--window-size", "64", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a residual model (reach 8)" in err
    assert not (tmp_path / "out").exists()
