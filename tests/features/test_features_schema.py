"""The schema hash is what a trained model's manifest stores: it must be stable across runs and change
whenever anything that changes the model's input changes."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import subprocess
import sys

import pytest

from rltune_daemon import features
from rltune_daemon.features.schema import ACTOR_SLOTS, CRITIC_SLOTS, FEATURES, Norm, schema_hash

PINNED = "a1fab8c3b81c4d6f"  # update deliberately: every trained model's manifest stores this value


def test_api_shape() -> None:
    assert len(features.FEATURE_NAMES) == 18 and len(set(features.FEATURE_NAMES)) == 18
    assert (features.ACTOR_DIM, features.CRITIC_DIM) == (9, 5)
    s = features.schema()
    json.dumps(s)  # JSON-ready for the manifest
    assert s["hash"] == features.SCHEMA_HASH and s["names"] == list(features.FEATURE_NAMES)
    assert len(s["actor_slots"]) == 9 and len(s["critic_slots"]) == 5


def test_hash_is_pinned_and_stable_across_processes() -> None:
    assert features.SCHEMA_HASH == PINNED
    code = "from rltune_daemon import features; print(features.SCHEMA_HASH)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == PINNED


def _swap(i: int, **changes: object) -> tuple[features.schema.FeatureSpec, ...]:
    specs = list(FEATURES)
    specs[i] = dataclasses.replace(specs[i], **changes)  # type: ignore[arg-type]
    return tuple(specs)


@pytest.mark.parametrize("variant", [
    lambda: (_swap(0, name="job_id"), ACTOR_SLOTS, CRITIC_SLOTS),
    lambda: (_swap(3, norm=Norm("log1p", 1.0, 32.0)), ACTOR_SLOTS, CRITIC_SLOTS),
    lambda: (_swap(14, params=(("time_floor_s", 60.0), ("age_scale_s", 86400.0), ("length_weight", 0.5),
                               ("age_weight", 0.5))), ACTOR_SLOTS, CRITIC_SLOTS),
    lambda: (_swap(14, params=(("time_floor_s", 600.0), ("age_scale_s", 86400.0), ("length_weight", 0.7),
                               ("age_weight", 0.3))), ACTOR_SLOTS, CRITIC_SLOTS),
    lambda: (FEATURES[1:] + FEATURES[:1], ACTOR_SLOTS, CRITIC_SLOTS),  # order
    lambda: (FEATURES, (dataclasses.replace(ACTOR_SLOTS[0], threshold=0.4), *ACTOR_SLOTS[1:]), CRITIC_SLOTS),
    lambda: (FEATURES, ACTOR_SLOTS, CRITIC_SLOTS[::-1]),
    lambda: (_swap(17, params=(("window", 5.0), ("recent", 200.0))), ACTOR_SLOTS, CRITIC_SLOTS),
], ids=["name", "normalisation", "params", "urgency-weights", "order", "actor-rule", "critic-order",
        "history-window"])
def test_hash_changes_with_schema(variant) -> None:  # type: ignore[no-untyped-def]
    assert schema_hash(*variant()) != features.SCHEMA_HASH


def test_descriptions_are_not_hashed() -> None:
    edited = _swap(0, formula="reworded", source="reworded")
    assert schema_hash(edited) == features.SCHEMA_HASH


def test_normalisation_reads_the_declared_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hash covers the constants because the computing code reads them from the declarations."""
    from feature_helpers import NOW, view_of

    from rltune_daemon.domain.cluster import NodeSpec
    from rltune_daemon.domain.jobs import Job
    from rltune_daemon.features.schema import INDEX

    compute = importlib.import_module("rltune_daemon.features.build")  # the module, not features.build()
    v = view_of([NodeSpec("n0", "a", 8, 8, 8000)], [], [Job("x", NOW - 100, 4, 3600.0)])
    i = INDEX["req_gpus"]
    assert features.raw_features(v)[0, i] == pytest.approx(math.log1p(4) / math.log1p(64))
    monkeypatch.setattr(compute, "FEATURES", _swap(i, norm=Norm("log1p", 1.0, 32.0)))
    assert features.raw_features(v)[0, i] == pytest.approx(math.log1p(4) / math.log1p(32))


def test_urgency_reads_its_declared_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """The urgency weights are hashed params (they were code literals under schema a6d9872f25121d96): a
    model trained with other weights is refused instead of silently seeing other values."""
    from feature_helpers import NOW, view_of

    from rltune_daemon.domain.cluster import NodeSpec
    from rltune_daemon.domain.jobs import Job
    from rltune_daemon.features.schema import INDEX, PARAMS

    compute = importlib.import_module("rltune_daemon.features.build")
    v = view_of([NodeSpec("n0", "a", 8, 8, 8000)], [], [Job("x", NOW - 1800, 4, 3600.0)])
    i = INDEX["urgency"]
    by_length, by_age = math.log1p(1800 / 3600), math.log1p(1800 / 86400)
    assert features.raw_features(v)[0, i] == pytest.approx(0.5 * by_length + 0.5 * by_age)
    monkeypatch.setattr(compute, "PARAMS", {**PARAMS, "urgency": {**PARAMS["urgency"], "length_weight": 1.0,
                                                                    "age_weight": 0.0}})
    assert features.raw_features(v)[0, i] == pytest.approx(by_length)
