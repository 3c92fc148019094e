from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rltune_daemon.domain.jobs import Job
from rltune_daemon.traces.estimates import (
    DAY,
    LADDER,
    UserEstimateModel,
    apply_estimates,
    estimate_limits,
    round_up,
    user_limits,
)


def test_round_up_ladder() -> None:
    got = round_up(np.array([1.0, 60.0, 61.0, 3601.0, 6.5 * DAY, 400 * DAY]))
    assert got.tolist() == [60.0, 60.0, 120.0, 5400.0, 7 * DAY, 400 * DAY]
    assert list(LADDER) == sorted(LADDER)


@given(
    st.lists(st.floats(min_value=1.0, max_value=90 * DAY), min_size=1, max_size=200), st.integers(0, 2**31)
)
def test_never_below_runtime(runtimes: list[float], seed: int) -> None:
    rt = np.array(runtimes)
    lim = user_limits(rt, seed, cap=7 * DAY)
    assert np.all(lim >= rt)
    within = rt <= 7 * DAY
    assert np.all(lim[within] <= 7 * DAY)  # capped at the site maximum unless the job ran longer
    assert np.all(np.isin(lim[~within], round_up(rt[~within])))


def test_shape_of_the_user_model() -> None:
    rt = np.full(50_000, 700.0)
    lim = user_limits(rt, 0, cap=DAY)
    assert np.mean(lim == DAY) == pytest.approx(0.15, abs=0.02)  # p_max (plus rare natural hits)
    assert np.all(np.isin(lim, np.array(LADDER)))  # only round values
    assert np.median(lim[lim < DAY]) == 1800.0  # median factor 2: 1400 s, rounded up to 30 min
    assert len(np.unique(lim)) < 20  # modal, as Tsafrir et al. observe


def test_seeded_and_pure() -> None:
    rt = np.linspace(10, 1e5, 1000)
    assert np.array_equal(user_limits(rt, 7), user_limits(rt, 7))
    assert not np.array_equal(user_limits(rt, 7), user_limits(rt, 8))
    assert np.array_equal(
        user_limits(rt, 1, model=UserEstimateModel(p_max=0.0, sigma=0.0)), round_up(rt * 2.0)
    )


def test_models() -> None:
    rt = np.array([100.0, 200.0, 300.0])
    trace = np.array([50.0, np.nan, 1000.0])
    lim, counts = estimate_limits(rt, "trace", 0, trace_limits=trace)
    assert lim[0] == 100.0 and lim[2] == 1000.0 and lim[1] >= 200.0
    assert counts == {"filled_by_user_model": 1, "raised_to_runtime": 1}
    lim, _ = estimate_limits(rt, "oracle", 0)
    assert lim.tolist() == rt.tolist()
    with pytest.raises(ValueError):
        UserEstimateModel(p_max=2.0)


def test_apply_estimates() -> None:
    jobs = [Job(str(i), float(i), 1, 10.0, runtime=100.0 * (i + 1)) for i in range(50)]
    out = apply_estimates(jobs, "user", seed=1, cap=3600.0)
    assert out == apply_estimates(jobs, "user", seed=1, cap=3600.0)
    assert [j.time_limit for j in jobs] == [10.0] * 50  # inputs untouched
    assert all(o.time_limit >= o.runtime for o in out if o.runtime is not None)
    assert [o.time_limit for o in apply_estimates(jobs, "oracle", 0)] == [j.runtime for j in jobs]
    raised = apply_estimates(jobs, "trace", 0)
    assert [o.time_limit for o in raised] == [j.runtime for j in jobs]  # 10 s asked, more used
    with pytest.raises(ValueError):
        apply_estimates([Job("x", 0.0, 1, 10.0)], "user", 0)
