"""``rltune train --algo cem``: the elite refit, the search finding a known optimum, a seeded run on the
testbed trace (determinism, what it writes, a readable linear scorer that loads like any model) and the
refusals."""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from train_helpers import one_torch_thread, random_view, refusal, tiny_args, train_twice

from rltune_daemon import features
from rltune_daemon.cli.main import main
from rltune_daemon.policies.learned import load_learned
from rltune_daemon.train import harness
from rltune_daemon.train.cem import SMOOTHING, elite_fit
from rltune_daemon.train.network import Actor
from rltune_daemon.train.run import train


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


CEM = {"algo": "cem", "hidden": 0, "cem_population": 6, "cem_episodes": 2, "max_iterations": 3,
       "warm_start_episodes": 2, "seed": 5}


def test_elite_refit_moves_half_way_and_keeps_a_floor() -> None:
    mean, sigma = np.zeros(2), np.ones(2)
    cands = np.array([[4.0, 1.0], [0.0, 4.0], [2.0, 1.0], [9.0, 9.0]])
    scores = np.array([3.0, 1.0, 3.0, -5.0])  # a tie for first: the earlier candidate counts first
    new_mean, new_sigma = elite_fit(mean, sigma, cands, scores, 0.5, np.full(2, 0.9))
    elite = cands[[0, 2]]
    assert np.allclose(new_mean, SMOOTHING * elite.mean(axis=0))
    assert np.allclose(new_sigma, np.maximum(SMOOTHING * elite.std(axis=0) + (1 - SMOOTHING), 0.9))
    assert new_sigma[0] == pytest.approx(1.0)  # half-way from 1 to the elite's spread of 1
    assert new_sigma[1] == pytest.approx(0.9)  # the elite agree on weight 2: half-way is 0.5, the floor 0.9
    m1, _ = elite_fit(mean, sigma, cands, scores, 0.01, np.zeros(2))  # at least one elite
    assert np.allclose(m1, SMOOTHING * cands[0])


def test_search_finds_a_known_optimum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the simulator replaced by a known reward (minus the squared distance of the scorer's weights
    from a target), the search moves from its start towards the target and exports the best validated
    mean. The episodes' windows and the validation step are the real ones."""
    target = np.linspace(-1.0, 1.0, features.ACTOR_DIM + 1)

    def episode(actor: Actor, critic: Any, start: int, seed: int, deterministic: bool) -> dict[str, Any]:
        w = torch.nn.utils.parameters_to_vector(actor.parameters()).detach().double().numpy()
        m = {"bsld": 1.0, "wait_mean": 1.0}
        return {"steps": [], "reward": -float(((w - target) ** 2).sum()), "start": start, "skipped": False,
                "rl": m, "base": m}

    monkeypatch.setattr(harness, "run_episode", episode)
    out = tmp_path / "toy"
    manifest = train(tiny_args(out, **{**CEM, "max_iterations": 40, "cem_population": 12, "cem_sigma": 5.0,
                                       "warm_start_episodes": 0, "seed": 0}))
    torch.manual_seed(0)
    start = torch.nn.utils.parameters_to_vector(Actor(features.ACTOR_DIM, 0).parameters()).detach().numpy()
    weights = manifest["linear_scorer"]
    found = np.array([weights[s.name] for s in features.ACTOR_SLOTS] + [weights["bias"]])
    assert np.linalg.norm(found - target) < 0.25 * np.linalg.norm(start - target)
    assert manifest["validation_reward"] == pytest.approx(-float(((found - target) ** 2).sum()), abs=1e-4)
    rows = list(csv.DictReader((out / "training.csv").open()))
    assert len(rows) == 40 and float(rows[-1]["sigma"]) < float(rows[0]["sigma"])


@pytest.fixture(scope="module")
def twin_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    return train_twice(tmp_path_factory.mktemp("cem"), **CEM)


def test_same_seed_same_scorer(twin_runs: tuple[Path, Path, dict[str, Any]]) -> None:
    a, b, manifest = twin_runs
    assert json.loads((a / "manifest.json").read_text())["linear_scorer"] == \
        json.loads((b / "manifest.json").read_text())["linear_scorer"]
    assert (a / "training.csv").read_text().split("\n")[0] == (b / "training.csv").read_text().split("\n")[0]
    assert manifest["hyperparameters"]["algo"] == "cem" and manifest["iterations"] == 3


def test_run_writes_a_readable_scorer_that_loads_like_any_model(
        twin_runs: tuple[Path, Path, dict[str, Any]]) -> None:
    out, _, manifest = twin_runs
    written = {p.name for p in out.iterdir()}
    assert {"actor.pt", "manifest.json", "training.csv", "training_curve.png"} <= written
    rows = list(csv.DictReader((out / "training.csv").open()))
    assert [r["iteration"] for r in rows] == ["1", "2", "3"]
    assert rows[0]["val_reward"] != "nan" and rows[2]["val_reward"] == "nan"  # validated at 1 and 2
    assert all(int(r["episodes"]) == (6 + 1) * 2 for r in rows)  # 6 candidates and the mean, 2 windows each
    checkpoint = torch.load(out / "checkpoints" / "last.pt")  # the default, weights-only load
    assert checkpoint["iteration"] == 2 and checkpoint["mean"].shape == (features.ACTOR_DIM + 1,)
    weights = manifest["linear_scorer"]
    assert list(weights) == [*(s.name for s in features.ACTOR_SLOTS), "bias"]
    policy = load_learned(out)
    view = dataclasses.replace(random_view(40, seed=2), history=policy.history)
    x = torch.from_numpy(np.ascontiguousarray(features.build(view).actor))
    w = torch.tensor([weights[s.name] for s in features.ACTOR_SLOTS], dtype=torch.float32)
    by_hand = (x @ w + weights["bias"]).double().numpy()
    assert np.allclose(policy.raw_scores(view), by_hand, atol=1e-4)


@pytest.mark.parametrize(("kw", "needle"), [
    ({"hidden": 64}, "not a hidden layer of 64: set hidden = 0"),
    ({"cem_population": 1}, "expected at least 2 candidates"),
    ({"cem_elite": 1.0}, "expected an elite share in (0, 1)"),
    ({"cem_sigma": 0.0}, "a positive spread"),
    ({"algo": "es"}, "algo 'es'"),
])
def test_bad_search_settings_are_refused_before_any_work(tmp_path: Path, kw: dict[str, Any],
                                                         needle: str) -> None:
    assert needle in refusal(tmp_path / "m", **{**CEM, **kw})


def test_cli_picks_a_linear_actor_for_cem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "model"
    config = tmp_path / "cem.toml"
    small = "max_iterations = 1\ncem_population = 2\ncem_episodes = 1\n"
    base = ["train", "--trace", "testbed", "--out", str(out), "--workers", "1", "--heldout-windows", "0",
            "--algo", "cem", "--episode-jobs", "96", "--config", str(config)]
    config.write_text(small)
    assert main(base) == 0
    assert json.loads((out / "manifest.json").read_text())["hyperparameters"]["hidden"] == 0
    capsys.readouterr()
    config.write_text(small + "hidden = 32\n")
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "set hidden = 0" in err
    config.write_text(small + "lr = 0.01\n")
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lr: PPO's settings, unused by --algo cem; drop it" in err


def test_check_config_shows_a_linear_models_formula(
        twin_runs: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An admin sees what a linear model prefers before deploying it; a multi-layer model shows none."""
    from train_helpers import export_untrained

    from rltune_daemon.cli.daemon import main as daemon_main

    out, _, manifest = twin_runs
    monkeypatch.setenv("RLTUNE_STATE_FILE", str(tmp_path / "s.json"))
    monkeypatch.setenv("RLTUNE_BASE_POLICY", "sjf")
    monkeypatch.setenv("RLTUNE_MODEL", str(out))
    assert daemon_main(["--check-config"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("formula: "))
    heaviest = max((k for k in manifest["linear_scorer"] if k != "bias"),
                   key=lambda k: abs(manifest["linear_scorer"][k]))
    assert line.startswith(f"formula: score = {manifest['linear_scorer'][heaviest]:+.3g} {heaviest} ")
    assert all(f" {s.name}" in line for s in features.ACTOR_SLOTS)
    export_untrained(Actor(features.ACTOR_DIM), tmp_path / "mlp")
    monkeypatch.setenv("RLTUNE_MODEL", str(tmp_path / "mlp"))
    assert daemon_main(["--check-config"]) == 0
    printed = capsys.readouterr().out
    assert "policy: model" in printed and "formula:" not in printed


def test_a_hand_edited_formula_prints_nothing(twin_runs: tuple[Path, Path, dict[str, Any]],
                                              tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "edited"
    shutil.copytree(twin_runs[0], out)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "linear_scorer": {"wait": "heavy"}}))
    assert load_learned(out).formula() is None  # a hand-edited manifest prints nothing, breaks nothing
