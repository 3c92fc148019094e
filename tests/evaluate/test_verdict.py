"""``rltune evaluate``'s verdict: the simplest option that nothing evaluated beats beyond noise."""

from __future__ import annotations

from typing import Any

from rltune_daemon.evaluate.verdict import verdict


def _results(**series: tuple[list[float], list[float]]) -> dict[str, Any]:
    """Results as ``evaluate`` returns them, from per-window (BSLD, wait) lists per policy."""
    pols = {}
    for name, (bsld, wait) in series.items():
        per = [{"window": i, "bsld": b, "wait_mean": w}
               for i, (b, w) in enumerate(zip(bsld, wait, strict=True))]
        pols[name.replace("__", ":").replace("_", "-")] = {
            "bsld": sum(bsld) / len(bsld), "wait_mean": sum(wait) / len(wait), "per_window": per}
    return {"policies": pols, "config": {}}


MF = ([4.0, 5.0, 6.0, 7.0], [400.0, 500.0, 600.0, 700.0])
LOWER = ([3.0, 4.1, 4.9, 6.0], [300.0, 410.0, 490.0, 600.0])  # about 1 and 100 s lower in every window


def test_no_model_daemon_beyond_noise_and_a_model_that_only_ties_it() -> None:
    line = verdict(_results(multifactor=MF, daemon__sjf=LOWER, rltune__m=([3.0, 4.0, 5.1, 6.0], LOWER[1])))
    assert line.startswith("verdict: the daemon without a model (base_policy = sjf);")
    assert "daemon:sjf vs multifactor: better" in line and "rltune:m vs daemon:sjf: tie" in line
    assert "\n" not in line


def test_model_beyond_noise_over_the_no_model_daemon() -> None:
    model = ([2.0, 3.1, 3.9, 5.0], [200.0, 310.0, 390.0, 500.0])
    line = verdict(_results(multifactor=MF, daemon__sjf=LOWER, rltune__m=model))
    assert line.startswith("verdict: the daemon with the model (model = m);")


def test_leave_slurm_alone_when_nothing_is_better_beyond_noise() -> None:
    noisy = ([3.0, 6.5, 5.0, 8.0], [300.0, 650.0, 500.0, 800.0])  # lower on average, not beyond 2 SE
    trade = ([3.0, 4.0, 5.0, 6.0], [500.0, 600.0, 700.0, 800.0])  # lower slowdown, higher wait
    line = verdict(_results(multifactor=MF, daemon__sjf=noisy, rltune__m=trade))
    assert line.startswith("verdict: leave Slurm alone (multifactor);")
    assert "daemon:sjf vs multifactor: tie" in line and "rltune:m vs multifactor: trade-off" in line


def test_the_daemon_judged_is_one_that_beats_multifactor_not_merely_the_lowest_mean() -> None:
    noisy_low = ([1.0, 6.5, 2.0, 8.0], [300.0, 650.0, 500.0, 800.0])
    line = verdict(_results(multifactor=MF, daemon__qssf=noisy_low, daemon__sjf=LOWER))
    assert line.startswith("verdict: the daemon without a model (base_policy = sjf);")


def test_says_what_is_missing_or_nothing_for_heuristics_alone() -> None:
    assert verdict(_results(sjf=MF, fcfs=LOWER)) == ""
    assert "add multifactor to --policies" in verdict(_results(daemon__sjf=LOWER))
    one = _results(multifactor=([4.0], [400.0]), daemon__sjf=([3.0], [300.0]))
    assert "at least 2 windows" in verdict(one)
