"""The no-harm criterion: which size class, tail or utilisation a policy makes pay, against multifactor."""

from __future__ import annotations

import numpy as np

from rltune_daemon.harm import Figures, judge, size_class, wait_by_class


def _figures(classes: dict[str, float], *, p99: float = 1000.0, util: float = 0.7, util_arr: float = 0.8,
             wait: tuple[float, ...] = (100.0, 200.0, 300.0), jobs: int = 100) -> Figures:
    return Figures(bsld=(2.0, 3.0, 4.0), wait=wait,
                   classes={k: {"jobs": float(jobs), "wait_mean": v} for k, v in classes.items()},
                   wait_p99=p99, utilization=util, utilization_arrival=util_arr)


MF = _figures({"1": 100.0, "5-8": 4000.0})


def test_size_classes_cover_every_request() -> None:
    assert [size_class(g) for g in (0, 1, 2, 3, 4, 5, 8, 9, 64, 65, 4096)] == [
        "1", "1", "2", "3-4", "3-4", "5-8", "5-8", "9-16", "17-64", "65+", "65+"]
    got = wait_by_class(np.array([10.0, 20.0, np.nan, 100.0]), np.array([1, 1, 1, 8]))
    assert got == {"1": {"jobs": 2, "wait_mean": 15.0}, "5-8": {"jobs": 1, "wait_mean": 100.0}}


def test_the_same_figures_do_no_harm() -> None:
    j = judge(MF, MF)
    assert j.ok and j.line() == "no harm" and j.as_json()["ok"]


def test_a_class_waiting_more_than_a_tenth_and_a_minute_longer_is_named_worst_first() -> None:
    j = judge(_figures({"1": 200.0, "5-8": 9000.0}), MF)
    assert not j.ok and j.hurt == ("5-8", "1")
    assert j.failures[0] == "5-8-GPU jobs wait 2.25× multifactor's (9000 s against 4000 s)"
    # 1.1 x 100 + 60 = 170 s: 150 s is within it; 4460 s too (1.1 x 4000 + 60)
    assert judge(_figures({"1": 170.0, "5-8": 4460.0}), MF).ok


def test_small_classes_are_not_judged_on_their_own() -> None:
    few = _figures({"1": 100.0, "5-8": 4000.0}, jobs=49)
    assert judge(_figures({"1": 100.0, "5-8": 40000.0}, jobs=49), few).ok


def test_tail_utilisation_and_means_each_count() -> None:
    assert judge(_figures({"1": 100.0, "5-8": 4000.0}, p99=1200.0), MF).failures == (
        "p99 wait 1200 s against multifactor's 1000 s",)
    low = judge(_figures({"1": 100.0, "5-8": 4000.0}, util_arr=0.78), MF)
    assert low.failures == ("GPU utilisation over the arrivals 0.780 against multifactor's 0.800",)
    longer = judge(_figures({"1": 100.0, "5-8": 4000.0}, wait=(150.0, 260.0, 355.0)), MF)
    assert longer.failures[0].startswith("mean wait higher than multifactor's (+55.00 ± ")
    # a p99 of a few seconds does not forbid every change: 60 s of slack
    assert judge(_figures({"1": 100.0}, p99=50.0), _figures({"1": 100.0}, p99=0.0)).ok
