"""``rltune train --init MODEL``: a run starts from a trained model's weights, keeps that model as its
iteration-0 candidate (so it never exports something that validated worse than its start), records it
in the manifest, and refuses a model that does not fit the run with one line before any work."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from train_helpers import export_untrained, one_torch_thread, refusal, tiny_args

from rltune_daemon import features
from rltune_daemon.cli.main import main
from rltune_daemon.policies.learned import model_identity
from rltune_daemon.train import harness
from rltune_daemon.train.harness import open_session
from rltune_daemon.train.network import Actor
from rltune_daemon.train.run import train

SHIPPED = Path("models/testbed-multifactor")  # a linear scorer ranking on its own, base multifactor
CEM = {"algo": "cem", "hidden": 0, "base": "multifactor", "cem_population": 4, "cem_episodes": 1,
       "init": SHIPPED}


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


def _vector(state: dict[str, torch.Tensor]) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.concatenate([v.detach().double().numpy().ravel() for _, v in sorted(state.items())])


def test_the_run_starts_at_the_models_weights(tmp_path: Path) -> None:
    session = open_session(tiny_args(tmp_path / "m", **CEM))
    try:
        shipped = torch.jit.load(str(SHIPPED / "actor.pt"))  # type: ignore[no-untyped-call]
        assert np.array_equal(_vector(session.actor.state_dict()), _vector(shipped.state_dict()))
        assert session.init is not None
        assert session.init["actor_sha256"] == model_identity(SHIPPED)["actor_sha256"]
    finally:
        session.close()


def test_nothing_better_exports_the_start_and_the_manifest_names_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the simulator replaced by a reward that peaks at the starting weights, every generation
    validates worse than iteration 0, so the exported actor is the model the run started from."""
    start = _vector(torch.jit.load(str(SHIPPED / "actor.pt")).state_dict())  # type: ignore[no-untyped-call]

    def episode(actor: Actor, critic: Any, s: int, seed: int, deterministic: bool) -> dict[str, Any]:
        m = {"bsld": 1.0, "wait_mean": 1.0}
        r = -float(((_vector(actor.state_dict()) - start) ** 2).sum())
        return {"steps": [], "reward": r, "start": s, "skipped": False, "rl": m, "base": m}

    monkeypatch.setattr(harness, "run_episode", episode)
    out = tmp_path / "m"
    manifest = train(tiny_args(out, **CEM, max_iterations=2))
    assert manifest["validation_reward_start"] == 0.0 and manifest["best_iteration"] == 0
    assert manifest["init"]["path"] == str(SHIPPED)
    assert manifest["init"]["actor_sha256"] == model_identity(SHIPPED)["actor_sha256"]
    exported = torch.jit.load(str(out / "actor.pt"))  # type: ignore[no-untyped-call]
    assert np.allclose(_vector(exported.state_dict()), start, atol=1e-6)
    shipped_formula = json.loads((SHIPPED / "manifest.json").read_text())["linear_scorer"]
    assert manifest["linear_scorer"] == pytest.approx(shipped_formula, abs=1e-5)


def _eight_input_model(root: Path) -> Path:
    """A model of 8 inputs (as trained before the ``hist_time`` input)."""
    out = root / "eight-inputs"
    out.mkdir()
    torch.jit.save(torch.jit.script(Actor(8, 0)), str(out / "actor.pt"))
    manifest = json.loads((SHIPPED / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "input_dim": 8}))
    return out


@pytest.mark.parametrize(("kw", "needle"), [
    ({"init": Path("no/such/model")}, "does not exist"),
    ({"warm_start_episodes": 2}, "starts from that model's weights: drop warm_start_episodes"),
    ({"algo": "ppo", "hidden": 64}, "its actor's layers are 9-1, this run's 9-64-32-1; set hidden = 0"),
    ({"init": "residual"}, "is a residual model (reach 8), which this version no longer runs: retrain it"),
    ({"init": Path("models/philly-sjf-naive"), "base": "sjf"},
     "it reads 'naive' features; set features = 'naive'"),
    ({"init": "ppo-shaped"}, "its actor's layers are 9-64-32-1, this run's 9-1; set hidden = 64 "
                             "(--algo cem searches linear scorers only)"),
    ({"init": "eight-inputs"}, "its actor reads 8 inputs, this version's 9; retrain the model"),
])
def test_a_model_that_does_not_fit_is_refused_before_any_work(tmp_path: Path, kw: dict[str, Any],
                                                               needle: str) -> None:
    if kw.get("init") == "ppo-shaped":
        export_untrained(Actor(features.ACTOR_DIM, 64), tmp_path / "ppo-shaped")
        kw = {"init": tmp_path / "ppo-shaped"}
    elif kw.get("init") == "eight-inputs":
        kw = {"init": _eight_input_model(tmp_path)}
    elif kw.get("init") == "residual":  # as earlier versions trained them (manifest reach > 0)
        residual = tmp_path / "residual"
        shutil.copytree(SHIPPED, residual)
        manifest = json.loads((residual / "manifest.json").read_text())
        (residual / "manifest.json").write_text(json.dumps({**manifest, "reach": 8}))
        kw = {"init": residual}
    assert needle in refusal(tmp_path / "m", **{**CEM, **kw})


def test_cli_init_error_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["train", "--trace", "testbed", "--algo", "cem", "--init", str(tmp_path / "none"),
               "--out", str(tmp_path / "m"), "--workers", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1 and "does not exist" in err
