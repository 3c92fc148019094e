"""Every model shipped in models/ loads with this version's feature schema and names what it is.

A feature change that alters the schema hash makes the loader refuse the shipped models (the daemon
would fall back to its base policy on every cluster); this test says so before a release does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rltune_daemon import features
from rltune_daemon.features.schema import LEGACY_ACTOR_DIM, SUPERSEDED
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
    if policy.feature_mode == "sampled":  # the current schema, or one it supersedes value for value
        current = policy.schema_hash == features.SCHEMA_HASH
        assert current or SUPERSEDED[policy.schema_hash][0] == features.SCHEMA_HASH
        assert policy.input_dim == (features.ACTOR_DIM if current else LEGACY_ACTOR_DIM)


def test_demo_repeats_the_models_own_caveat(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo runs the testbed model, whose manifest records a worse held-out BSLD than multifactor;
    the demo must say so rather than imply a win (and say nothing for a model without that record)."""
    from rltune_daemon.demo import say_model_caveat

    by_trace = {model_identity(p)["trace"]: p for p in MODELS}
    for trace in ("testbed", "helios"):
        ident = model_identity(by_trace[trace])
        say_model_caveat(str(by_trace[trace]))
        out = capsys.readouterr().out
        behind = ident["heldout_bsld"] is not None and ident["heldout_bsld"] > ident["heldout_base_bsld"]
        assert ("note: on held-out windows" in out) == behind
