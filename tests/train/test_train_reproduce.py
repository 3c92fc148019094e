"""Reproducing a training run: the same seed and iteration count give the same model whatever the
number of workers or torch threads, and ``rltune train --config MODEL`` repeats a run its manifest
records (a run that stopped on its time budget included) and says whether the weights are the same."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from train_helpers import one_torch_thread, tiny_args

from rltune_daemon.cli.main import main
from rltune_daemon.errors import UserError
from rltune_daemon.train.recipe import actor_difference, recipe_args
from rltune_daemon.train.run import train


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


def _rows(model: Path) -> list[dict[str, str]]:
    with (model / "training.csv").open() as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row.pop("minutes")
    return rows


def _manifest(model: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((model / "manifest.json").read_text())
    return data


def test_workers_and_threads_do_not_change_the_model(tmp_path: Path) -> None:
    """Four episodes per update over two workers used to come back as 0, 2, 1, 3: another batch order,
    another model than one worker's."""
    run = {"episodes_per_iter": 4, "validation_episodes": 3, "max_iterations": 2, "warm_start_episodes": 2,
           "seed": 5}
    one = train(tiny_args(tmp_path / "one", workers=1, **run))
    torch.set_num_threads(2)  # the run sets its own; a caller's setting must not reach the model
    two = train(tiny_args(tmp_path / "two", workers=2, **run))
    assert actor_difference(tmp_path / "one", tmp_path / "two") == 0.0
    assert _rows(tmp_path / "one") == _rows(tmp_path / "two")
    assert one["validation_reward"] == two["validation_reward"]
    assert one["warm_start"]["nll_per_pick"] == two["warm_start"]["nll_per_pick"]


def test_recipe_repeats_a_run_that_stopped_on_its_time_budget(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    first = tmp_path / "first"
    manifest = train(tiny_args(first, minutes=0.15, max_iterations=0, warm_start_episodes=2, seed=2,
                               starvation_reference="priority"))
    assert manifest["iterations"] >= 1
    from rltune_daemon.train.args import rollout_settings

    assert manifest["rollouts"] == rollout_settings(tiny_args(first, starvation_reference="priority"))
    assert manifest["rollouts"]["starvation_reference"] == "priority"
    again = tmp_path / "again"
    assert main(["train", "--config", str(first / "manifest.json"), "--out", str(again)]) == 0  # all cores
    out = capsys.readouterr().out
    assert f"same actor weights as {first}" in out
    assert _rows(first) == _rows(again)
    a, b = _manifest(first), _manifest(again)
    assert b["iterations"] == a["iterations"] and b["validation_reward"] == a["validation_reward"]
    assert b["hyperparameters"]["max_iterations"] == a["iterations"]
    assert b["hyperparameters"]["starvation_reference"] == "priority"


def test_recipe_reports_a_different_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The comparison can fail: a model whose weights were changed after training is not reproduced."""
    model = tmp_path / "model"
    train(tiny_args(model, max_iterations=1, seed=4))
    actor = torch.jit.load(str(model / "actor.pt"))  # type: ignore[no-untyped-call]
    with torch.no_grad():
        next(iter(actor.parameters())).add_(0.5)
    torch.jit.save(actor, str(model / "actor.pt"))  # type: ignore[no-untyped-call]
    assert main(["train", "--config", str(model), "--out", str(tmp_path / "again"), "--workers", "1"]) == 0
    assert "largest weight difference 0.5" in capsys.readouterr().out


def test_recipe_finds_the_model_a_fine_tuning_started_from(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    start, tuned = tmp_path / "start", tmp_path / "tuned"
    cem = {"algo": "cem", "hidden": 0, "cem_population": 3, "cem_episodes": 1, "max_iterations": 1}
    train(tiny_args(start, seed=1, **cem))
    train(tiny_args(tuned, init=start, seed=1, **cem))
    moved = tmp_path / "kept" / "start"
    shutil.copytree(start, moved)
    train(tiny_args(start, seed=9, **cem))  # the recorded path now holds another model
    with pytest.raises(UserError, match="pass --init with that model's directory"):
        recipe_args(tuned, tmp_path / "x")
    with pytest.raises(UserError, match="not fine-tuned from another model; drop --init"):
        recipe_args(start, tmp_path / "x", init=moved)
    args, _ = recipe_args(tuned, tmp_path / "x", init=moved)
    assert args.init == moved and args.algo == "cem" and args.max_iterations == 1
    assert main(["train", "--config", str(tuned), "--init", str(moved), "--out", str(tmp_path / "again"),
                 "--workers", "1"]) == 0
    assert f"same actor weights as {tuned}" in capsys.readouterr().out


def _fake_model(root: Path, manifest: dict[str, Any]) -> Path:
    root.mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_recipe_notes_what_the_manifest_predates(tmp_path: Path) -> None:
    from rltune_daemon.train.args import rollout_settings

    base = {"trace": "testbed", "iterations": 3, "hyperparameters": {"seed": 7, "base": "fcfs"}}
    _, notes = recipe_args(_fake_model(tmp_path / "old", base), tmp_path / "x")
    assert any("predates" in n and "lr" in n for n in notes)
    assert any("predates recorded rollout settings" in n for n in notes)
    rollouts = {**rollout_settings(tiny_args(tmp_path)), "starvation_reference": "both"}
    args, notes = recipe_args(_fake_model(tmp_path / "other", {**base, "rollouts": rollouts}), tmp_path / "x")
    assert args.seed == 7 and args.base == "fcfs" and args.max_iterations == 3
    assert any("starvation_reference both -> priority" in n for n in notes)
    # a manifest older than the guard setting runs under this version's, and says so
    args, notes = recipe_args(tmp_path / "old", tmp_path / "x")
    assert args.starvation_reference == "priority"
    assert any("predates" in n and "starvation_reference" in n for n in notes)
    assert any("(reference priority, stretch 2)" in n for n in notes)
    # ... but a manifest older than size-class reordering ran every job reordered, and repeats that
    assert (args.reorder, args.next_in_line) == ("queue", 0)
    assert not any("predates" in n and "reorder" in n for n in notes)


@pytest.mark.parametrize(("extra", "manifest", "needle"), [
    (["--seed", "3"], None, "takes every setting from the model's manifest; drop it"),
    (["--base", "fcfs", "--minutes", "1"], None, "--base, --minutes: --config "),
    (["--algo", "cem"], None, "--algo: --config "),
    ([], {"trace": "testbed"}, "records no hyperparameters or iteration count"),
    ([], {"trace": "testbed", "iterations": 0, "hyperparameters": {}}, "records 0 iterations"),
    ([], {"trace": "testbed", "iterations": 1, "hyperparameters": {"credit": "step"}},
     "trained with credit 'step', which this version no longer runs"),
    ([], {"trace": "testbed", "iterations": 1, "hyperparameters": {"rivals": "fcfs"}},
     "trained with rivals 'fcfs', which this version no longer runs"),
    ([], {"trace": "testbed", "iterations": 1, "hyperparameters": {"metric": "both", "vary": False}},
     "trained with metric 'both', which this version no longer runs"),
    ([], {"trace": "testbed", "iterations": 1, "hyperparameters": {"metric": "bsld+wait", "vary": True}},
     "trained with vary True, which this version no longer runs"),
    ([], {"trace": "testbed", "iterations": 1, "hyperparameters": {"reach": 8.0}},
     "trained with reach 8.0, which this version no longer runs"),
])
def test_recipe_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                                      manifest: dict[str, Any] | None, needle: str) -> None:
    model = _fake_model(tmp_path / "model", manifest or {"trace": "testbed", "iterations": 1,
                                                         "hyperparameters": {}})
    out = tmp_path / "again"
    assert main(["train", "--config", str(model), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and needle in err, err
    assert not out.exists()


def test_recipe_into_its_own_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _fake_model(tmp_path / "model", {"trace": "testbed", "iterations": 1, "hyperparameters": {}})
    assert main(["train", "--config", str(model / "manifest.json"), "--out", str(model)]) == 2
    assert "that is the model being repeated" in capsys.readouterr().err
