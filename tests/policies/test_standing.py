"""A model's standing on its own held-out record: behind the reference only beyond noise, and never run
without evidence that no class of jobs pays for its gains."""

from __future__ import annotations

from typing import Any

from rltune_daemon.policies.standing import standing

WAITS = [100.0, 200.0, 300.0]


def _figures(classes: dict[str, float], p99: float = 900.0, util: float = 0.7) -> dict[str, Any]:
    return {"wait_by_size": {k: {"jobs": 300, "wait_mean": v} for k, v in classes.items()},
            "wait_p99": p99, "utilization": util, "utilization_arrival": util}


def _record(model: list[float], mf: list[float], model_classes: dict[str, float] | None = None,
            figures: bool = True) -> dict[str, Any]:
    mf_classes = {"1": 100.0, "5-8": 1000.0}
    rec: dict[str, Any] = {
        "windows": 3, "model": {"bsld": sum(model) / 3}, "multifactor": {"bsld": sum(mf) / 3},
        "per_window": {"model": {"bsld": model, "wait_mean": WAITS},
                       "multifactor": {"bsld": mf, "wait_mean": WAITS}}}
    if figures:
        rec["model"].update(_figures(model_classes or mf_classes))
        rec["multifactor"].update(_figures(mf_classes))
    return rec


def test_a_model_is_behind_only_when_its_record_shows_it() -> None:
    manifest: dict[str, Any] = {"trace": "philly", "base_policy": "multifactor",
                                "heldout": _record([2.0, 3.0, 4.0], [2.5, 3.4, 4.6])}
    assert standing(manifest).reason == ""
    manifest["heldout"] = _record([2.5, 3.4, 4.6], [2.0, 3.0, 4.0])
    where = standing(manifest)
    assert where.instead == "multifactor"
    assert where.reason.startswith("on 3 held-out windows of philly this model fails the no-harm check "
                                   "against multifactor: mean BSLD higher than multifactor's (+0.50 ± 0.06 "
                                   "per window)")
    assert "is behind multifactor" not in where.reason  # said once
    manifest["heldout"] = _record([2.5, 3.4, 4.6], [2.0, 3.0, 4.0], figures=False)
    assert "this model is behind multifactor: bounded slowdown 3.50 against 3.00" in standing(manifest).reason


def test_a_model_that_makes_a_size_class_wait_is_behind_multifactor_whatever_its_means() -> None:
    """Lower BSLD in every window, yet its 5-8-GPU jobs wait 1.5x as long: not run."""
    manifest = {"trace": "philly", "base_policy": "sjf",
                "heldout": _record([2.0, 3.0, 4.0], [2.5, 3.4, 4.6], {"1": 50.0, "5-8": 1500.0})}
    where = standing(manifest)
    assert where.instead == "multifactor"
    assert "fails the no-harm check against multifactor" in where.reason
    assert "5-8-GPU jobs wait 1.50× multifactor's (1500 s against 1000 s)" in where.reason
    # within 1.1 x + 60 s the class is not hurt
    manifest["heldout"] = _record([2.0, 3.0, 4.0], [2.5, 3.4, 4.6], {"1": 50.0, "5-8": 1150.0})
    assert standing(manifest).reason == ""


def test_a_record_without_the_no_harm_figures_is_not_evidence_enough() -> None:
    manifest = {"trace": "philly", "base_policy": "sjf", "heldout": _record([2.0, 3.0, 4.0], [2.5, 3.4, 4.6],
                                                                           figures=False)}
    where = standing(manifest)
    assert where.instead == "multifactor" and "rltune heldout MODEL --replace" in where.reason


def test_no_record_no_verdict() -> None:
    assert standing({"trace": "philly"}).reason == ""
