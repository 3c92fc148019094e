"""Every model shipped in models/ loads with this version's feature schema and names what it is.

A feature change that alters the schema hash makes the loader refuse the shipped models (the daemon
would fall back to its base policy on every cluster); this test says so before a release does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rltune_daemon import features
from rltune_daemon.policies.learned import load_learned, model_identity

MODELS = sorted(p for p in (Path(__file__).resolve().parents[2] / "models").glob("*")
                if (p / "manifest.json").is_file())


def test_a_model_ships_for_each_evaluated_trace() -> None:
    assert {model_identity(p)["trace"] for p in MODELS} >= {"philly", "helios", "alibaba", "testbed"}


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_shipped_model_loads(path: Path) -> None:
    ident = model_identity(path)
    assert path.name.startswith(f"{ident['trace']}-{ident['base_policy']}")
    policy = load_learned(path)
    if policy.feature_mode == "sampled":
        assert policy.schema_hash == features.SCHEMA_HASH and policy.learns_history


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_every_shipped_model_records_whether_it_does_harm(path: Path) -> None:
    """Every model a site can configure carries a held-out record with every window and the no-harm
    figures (wait per size class, p99 wait, utilisation), for itself and for multifactor, measured under
    the daemon's settings: the daemon acts on it only when that record shows no class paying and the
    model not behind, and says why not otherwise. A shipped model whose record predates the figures
    would be refused on every cluster for want of evidence."""
    from rltune_daemon.policies.learned import read_manifest
    from rltune_daemon.policies.standing import PREDATES, harm_failures, standing

    manifest = read_manifest(path)
    record = manifest["heldout"]
    assert len(record["per_window"]["model"]["bsld"]) == record["windows"] >= 10
    assert len(record["per_window"]["multifactor"]["wait_mean"]) == record["windows"]
    hurts = harm_failures(record)
    assert hurts is not None, PREDATES
    reason = standing(manifest).reason
    assert (reason == "") == (not hurts and "is behind" not in reason)
    assert all(h in reason for h in hurts)


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_a_shipped_models_recorded_rollouts_are_what_its_recipe_runs(path: Path, tmp_path: Path) -> None:
    """Every shipped model records the settings its training episodes ran under (what the daemon
    compares its own with at start), and they are the ones ``rltune train --config MODEL`` runs today:
    a recipe that reproduced a model's weights is the evidence for a record added after training
    (``amended``)."""
    from rltune_daemon.policies.learned import read_manifest
    from rltune_daemon.train.args import rollout_settings
    from rltune_daemon.train.recipe import recipe_args

    manifest = read_manifest(path)
    assert manifest.get("rollouts"), "every shipped model records its rollouts (rltune train --config MODEL)"
    init = manifest.get("init")
    # the testbed model was fine-tuned from T1, kept as a test fixture (its manifest names where it was then)
    start = Path(__file__).resolve().parents[2] / "tests/fixtures/models/testbed-t1" if init else None
    args, notes = recipe_args(path, tmp_path / "x", init=start)
    assert rollout_settings(args) == manifest["rollouts"]
    assert args.starvation_reference == manifest["hyperparameters"]["starvation_reference"]
    assert not any("planner settings" in n or "starvation_reference" in n for n in notes), notes
    assert not any("this version has no" in n for n in notes), notes  # retired settings at their kept value
