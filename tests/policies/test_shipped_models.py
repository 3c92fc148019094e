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
        assert policy.schema_hash == features.SCHEMA_HASH
