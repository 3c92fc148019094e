"""A model's standing on its own held-out record: behind the reference only beyond noise."""

from __future__ import annotations

from typing import Any

from rltune_daemon.policies.standing import standing


def _record(model: list[float], mf: list[float]) -> dict[str, Any]:
    waits = [100.0, 200.0, 300.0]
    return {"windows": 3, "model": {"bsld": sum(model) / 3}, "multifactor": {"bsld": sum(mf) / 3},
            "per_window": {"model": {"bsld": model, "wait_mean": waits},
                           "multifactor": {"bsld": mf, "wait_mean": waits}}}


def test_a_model_is_behind_only_when_its_record_shows_it() -> None:
    manifest: dict[str, Any] = {"trace": "philly", "base_policy": "multifactor",
                                "heldout": _record([2.0, 3.0, 4.0], [2.5, 3.4, 4.6])}
    assert standing(manifest).reason == ""
    manifest["heldout"] = _record([2.5, 3.4, 4.6], [2.0, 3.0, 4.0])
    where = standing(manifest)
    assert where.instead == "multifactor"
    assert where.reason.startswith("on 3 held-out windows of philly this model is behind multifactor")
