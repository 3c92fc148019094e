"""Randomised variants of a workload (``traces.variants``): what each factor changes, what it keeps, and
that a variant is a pure function of its seed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rltune_daemon.domain.workload import Workload
from rltune_daemon.traces import load_workload, split_by_time
from rltune_daemon.traces.estimates import UserEstimateModel
from rltune_daemon.traces.variants import Variant, _fits, apply_variant, draw_variant, scaled_cluster
from rltune_daemon.train.episodes import Episodes, episode_workload


def _window(estimates: str = "user", n: int = 300) -> Workload:
    wl = load_workload("testbed", estimates=estimates, seed=0, jobs="2000")
    return episode_workload(split_by_time(wl)[0], 100, n)


def _variant(**kw: float) -> Variant:
    base = {"size": 1.0, "load": 1.0, "runtime_noise": 0.0, "seed": 3}
    return Variant(estimates=UserEstimateModel(), **{**base, **kw})  # type: ignore[arg-type]


def test_a_variant_is_a_function_of_its_seed_and_key() -> None:
    wl = _window()
    a, b = apply_variant(wl, draw_variant(0, 5)), apply_variant(wl, draw_variant(0, 5))
    assert a.jobs == b.jobs and a.cluster == b.cluster
    others = [apply_variant(wl, draw_variant(s, k)) for s, k in ((0, 6), (1, 5))]
    assert all(o.jobs != a.jobs for o in others)


@pytest.mark.parametrize("key", range(12))
def test_every_variant_keeps_the_jobs_runnable_and_consistent(key: int) -> None:
    wl = _window()
    v = apply_variant(wl, draw_variant(0, key))
    assert [j.id for j in v.jobs] == [j.id for j in wl.jobs]
    assert [j.gpus for j in v.jobs] == [j.gpus for j in wl.jobs]
    assert all(j.runtime is not None and 1.0 <= j.runtime <= j.time_limit for j in v.jobs)
    assert all(b.submit >= a.submit for a, b in zip(v.jobs, v.jobs[1:], strict=False))
    assert _fits(v.cluster, v) and v.meta["variant"]["size"] >= draw_variant(0, key).size - 1e-3


def test_size_scales_each_node_group_and_never_strands_a_job() -> None:
    wl = _window()
    wl = dataclasses.replace(wl, cluster=scaled_cluster(wl.cluster, 4.0))  # 20 nodes, room to shrink
    nodes = len(wl.cluster.nodes)
    assert len(apply_variant(wl, _variant(size=2.0)).cluster.nodes) == 2 * nodes
    big = max(j.gpus for j in wl.jobs)
    tiny = apply_variant(wl, _variant(size=0.01))  # far below what the largest job needs
    assert tiny.cluster.total_gpus >= big and _fits(tiny.cluster, tiny)
    assert len(tiny.cluster.nodes) < nodes
    assert scaled_cluster(wl.cluster, 0.01).total_gpus < big  # so the guard, not the scaling, kept it


def test_load_compresses_the_gaps_between_submits() -> None:
    wl = _window()
    v = apply_variant(wl, _variant(load=2.0))
    span = wl.jobs[-1].submit - wl.jobs[0].submit
    assert v.jobs[0].submit == wl.jobs[0].submit
    assert v.jobs[-1].submit - v.jobs[0].submit == pytest.approx(span / 2.0)


def test_runtime_noise_keeps_the_mean_and_spreads_each_users_runs() -> None:
    wl = _window(n=1000)
    same = apply_variant(wl, _variant())
    assert [j.runtime for j in same.jobs] == [j.runtime for j in wl.jobs]
    noisy = apply_variant(wl, _variant(runtime_noise=0.8))
    ratio = np.array([b.runtime / a.runtime for a, b in zip(wl.jobs, noisy.jobs, strict=True)])  # type: ignore[operator]
    assert 0.8 < float(np.mean(ratio)) < 1.25 and float(np.std(np.log(ratio))) > 0.6


def test_requested_times_follow_the_drawn_habits_only_where_they_were_modelled() -> None:
    wl = _window()
    careless = apply_variant(wl, dataclasses.replace(_variant(), estimates=UserEstimateModel(0.0, 4.0, 0.25)))
    careful = apply_variant(wl, dataclasses.replace(_variant(), estimates=UserEstimateModel(0.0, 1.2, 0.25)))

    def over(w: Workload) -> float:
        return float(np.median([j.time_limit / j.runtime for j in w.jobs]))  # type: ignore[operator]

    assert over(careless) > 2.0 * over(careful)
    oracle = _window(estimates="oracle")
    assert all(j.time_limit == j.runtime for j in apply_variant(oracle, _variant(runtime_noise=0.5)).jobs)


def test_a_trace_s_own_limits_stay_and_rise_only_to_the_run_time() -> None:
    wl = dataclasses.replace(_window(), estimates="trace")  # limits as a file gives them
    v = apply_variant(wl, _variant(runtime_noise=0.5))
    for a, b in zip(wl.jobs, v.jobs, strict=True):
        assert b.time_limit == max(a.time_limit, b.runtime)  # type: ignore[type-var]


def test_episodes_vary_only_when_asked() -> None:
    part = split_by_time(load_workload("testbed", estimates="user", seed=0, jobs="1000"))[0]
    plain, varied = Episodes(["testbed"], [part], 100), Episodes(["testbed"], [part], 100, vary_seed=0)
    assert plain.workload(7).jobs == episode_workload(part, 7, 100).jobs
    assert varied.workload(7).jobs != plain.workload(7).jobs
    assert varied.workload(7).jobs == Episodes(["testbed"], [part], 100, vary_seed=0).workload(7).jobs
