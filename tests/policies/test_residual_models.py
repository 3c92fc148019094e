"""Residual models (manifest ``reach`` > 0: an actor that corrected its base policy's order by fewer than
``reach`` places) are no longer run: loading one is a one-line refusal that says to retrain it, and the
daemon falls back to its base policy with that line. Models of that kind were trained by earlier versions;
the fixture is a shipped model whose manifest says ``reach: 8``, as theirs did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rltune_daemon.cli.main import main
from rltune_daemon.errors import UserError
from rltune_daemon.policies.learned import load_learned
from rltune_daemon.service.policy import choose_policy

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "testbed-multifactor"


@pytest.fixture
def residual(tmp_path: Path) -> Path:
    model = tmp_path / "residual-model"
    shutil.copytree(SHIPPED, model)
    manifest = json.loads((model / "manifest.json").read_text())
    (model / "manifest.json").write_text(json.dumps({**manifest, "reach": 8}))
    return model


def test_a_residual_model_is_refused_in_one_line(residual: Path) -> None:
    with pytest.raises(UserError) as info:
        load_learned(residual)
    assert str(info.value) == (f"model {residual} is a residual model (reach 8), which this version no "
                               "longer runs: retrain it")


def test_the_daemon_falls_back_from_a_residual_model(residual: Path) -> None:
    choice = choose_policy(str(residual), "sjf")
    assert choice.policy.name == "sjf" and choice.fallback_kind == "unusable"
    assert "is a residual model (reach 8)" in choice.fallback


def test_evaluate_refuses_a_residual_model(residual: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--trace", "testbed", "--policies", f"rltune:{residual}", "--windows", "1",
                 "--window-size", "64", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a residual model (reach 8)" in err
    assert not (tmp_path / "out").exists()
