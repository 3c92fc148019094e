"""``rltune heldout``: a model trained with ``--heldout-windows 0`` gets the held-out record training
would have written, measured on its own trace, seed and backfill."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from train_helpers import export_untrained, one_torch_thread

from rltune_daemon import features
from rltune_daemon.cli.main import main
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.runner import EvalConfig, evaluate
from rltune_daemon.policies.learned import model_identity
from rltune_daemon.policies.standing import standing
from rltune_daemon.train.heldout import HELDOUT_KEYS, record_heldout
from rltune_daemon.train.network import Actor

SMALL = {"windows": 1, "window_size": 64, "jobs": 1}


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


def _model(root: Path, **manifest_keys: Any) -> Path:
    """An exported (untrained) testbed model over SJF with no held-out record, on a short trace."""
    torch.manual_seed(0)
    out = root / "m"
    export_untrained(Actor(features.ACTOR_DIM), out)
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    assert "heldout" not in manifest
    path.write_text(json.dumps({**manifest, "trace_options": {"jobs": "2000"}, **manifest_keys}))
    return out


def test_records_what_evaluate_measures_on_the_models_trace_and_seed(tmp_path: Path) -> None:
    out = _model(tmp_path, seed=2)
    rec = record_heldout(out, **SMALL)
    spec = f"rltune:{out}"
    res = evaluate(EvalConfig("testbed", ("sjf", "multifactor", spec), windows=1, window_size=64, seed=2,
                              jobs=1, opts={"jobs": "2000"}), progress=False)
    assert rec["model"] == {k: res["policies"][spec][k] for k in HELDOUT_KEYS}
    assert rec["base"] == {k: res["policies"]["sjf"][k] for k in HELDOUT_KEYS}
    # multifactor beside the base: what the daemon checks a model against before acting on it
    assert rec["multifactor"] == {k: res["policies"]["multifactor"][k] for k in HELDOUT_KEYS}
    assert rec["per_window"]["model"]["bsld"] == [w["bsld"] for w in res["policies"][spec]["per_window"]]
    assert rec["per_window"]["multifactor"]["wait_mean"] == [
        w["wait_mean"] for w in res["policies"]["multifactor"]["per_window"]]
    assert (rec["windows"], rec["window_size"], rec["seed"], rec["bf_reservations"]) == (1, 64, 2, 1)
    assert json.loads((out / "manifest.json").read_text())["heldout"] == rec
    assert model_identity(out)["heldout_bsld"] == rec["model"]["bsld"]  # logged at start, named in results


def test_backfill_defaults_to_the_models_and_a_record_is_not_overwritten_silently(tmp_path: Path) -> None:
    out = _model(tmp_path, bf_reservations=500)
    first = record_heldout(out, **SMALL)
    assert first["bf_reservations"] == 500
    before = (out / "manifest.json").read_text()
    with pytest.raises(UserError, match=r"already records a held-out result.*--replace") as info:
        record_heldout(out, **SMALL)
    assert "\n" not in str(info.value)
    assert (out / "manifest.json").read_text() == before
    again = record_heldout(out, **SMALL, bf_reservations=1, replace=True)
    assert again["bf_reservations"] == 1
    assert json.loads((out / "manifest.json").read_text())["heldout"] == again


def test_cli_prints_one_line_result_or_one_line_error(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["heldout", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    out = _model(tmp_path)
    assert main(["heldout", str(out), "--windows", "1", "--window-size", "64", "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    rec = json.loads((out / "manifest.json").read_text())["heldout"]
    assert f"model BSLD {rec['model']['bsld']:.2f}" in printed and "recorded in its manifest" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert ("warning:" in printed) == bool(standing(manifest).reason)
    assert f"multifactor {rec['multifactor']['bsld']:.2f}" in printed
    assert main(["heldout", str(out), "--windows", "0", "--replace"]) == 2
    assert "at least 1 window" in capsys.readouterr().err
    assert main(["heldout", str(out), "--bf-reservations", "0", "--replace"]) == 2
    assert "--bf-reservations 0: must be at least 1" in capsys.readouterr().err
    assert json.loads((out / "manifest.json").read_text())["heldout"] == rec  # nothing written


def test_a_sites_own_trace_trains_and_is_measured_on_its_cluster_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``rltune train --cluster``: a sacct/CSV trace with the site's node list, as ``evaluate`` takes it;
    the manifest records the file, and ``rltune heldout`` (and ``--config MODEL``) read the same nodes."""
    jobs, nodes = tmp_path / "jobs.csv", tmp_path / "nodes.csv"
    assert main(["trace", "export", "testbed", "-o", str(jobs), "--cluster-out", str(nodes)]) == 0
    out = tmp_path / "model"
    config = tmp_path / "cem.toml"
    config.write_text("max_iterations = 1\ncem_population = 2\ncem_episodes = 1\n")
    assert main(["train", "--trace", str(jobs), "--cluster", str(nodes), "--out", str(out), "--workers", "1",
                 "--heldout-windows", "0", "--algo", "cem", "--episode-jobs", "96", "--config",
                 str(config)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cluster"] == str(nodes) and "cluster" not in manifest["hyperparameters"]
    capsys.readouterr()
    small = ["--windows", "1", "--window-size", "64", "--jobs", "1"]
    assert main(["heldout", str(out), *small]) == 0
    nodes.rename(tmp_path / "moved.csv")
    assert main(["heldout", str(out), *small, "--replace"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(nodes) in err
