"""Per-decision credit: the charges decompose the episode's wait-driven cost exactly, fall on the
decisions during which jobs waited, and GAE matches its definition; a step-credit run trains."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from train_helpers import one_torch_thread, tiny_args

from rltune_daemon import features
from rltune_daemon.sim.metrics import bounded_slowdown
from rltune_daemon.train.credit import accrued, gae, step_rewards
from rltune_daemon.train.ppo import train


def test_accrued_charges_each_step_its_overlap() -> None:
    times = np.array([0.0, 10.0, 20.0])
    submit = np.array([5.0, 0.0])
    start = np.array([15.0, np.nan])  # job 1 never starts: waits until end_time
    got = accrued(times, submit, start, 40.0, np.array([1.0, 2.0]))
    # [0,10): job0 5 s + job1 10 s x2; [10,20): the same; [20,40): job1 20 s x2
    assert got == pytest.approx([5 + 20, 5 + 20, 40])
    # waiting before the first decision is charged to it
    one = accrued(np.array([10.0]), np.array([0.0]), np.array([12.0]), 12.0, np.ones(1))
    assert one == pytest.approx([12.0])


def test_step_rewards_sum_to_the_episode_cost() -> None:
    rng = np.random.default_rng(0)
    n = 200
    submit = np.sort(rng.uniform(0, 5000, n))
    start = submit + rng.exponential(300, n)
    run = rng.exponential(600, n) + 1.0
    end = start + run
    times = np.sort(rng.uniform(0, 6000, 80))
    times[0] = 0.0
    base = {"bsld": 3.0, "wait_mean": 250.0}
    r = step_rewards(times, submit, start, end, base, "bsld+wait")
    wait = start - submit
    wait_part = float((wait / np.maximum(run, 10.0)).sum()) / (n * 3.0)
    assert r.sum() == pytest.approx(-(wait_part + wait.mean() / 250.0) / 2)
    # the bsld term is bounded slowdown minus its ordering-independent part
    assert float(bounded_slowdown(wait, run).mean()) == pytest.approx(
        wait_part * 3.0 + float((run / np.maximum(run, 10.0)).mean()), rel=1e-6)
    assert (r <= 0).all()
    # a decision taken while nobody waits is charged nothing
    quiet = step_rewards(np.array([0.0, 100.0]), np.array([200.0]), np.array([200.0]), np.array([300.0]),
                         base, "wait")
    assert quiet[1] == 0.0 and quiet[0] == 0.0


def test_gae_matches_definition() -> None:
    r = np.array([1.0, 0.0, -1.0])
    v = np.array([0.5, 0.2, 0.1])
    adv, ret = gae(r, v, gamma=0.9, lam=0.8)
    d = [r[0] + 0.9 * v[1] - v[0], r[1] + 0.9 * v[2] - v[1], r[2] - v[2]]
    want = [d[0] + 0.72 * d[1] + 0.72**2 * d[2], d[1] + 0.72 * d[2], d[2]]
    assert adv == pytest.approx(want)
    assert ret == pytest.approx(np.array(want) + v)
    # lambda 1, gamma 1: the return is the plain sum of the rewards to go
    _, ret1 = gae(r, v, 1.0, 1.0)
    assert ret1 == pytest.approx([0.0, -1.0, -1.0])


def test_step_credit_run_trains_and_is_seeded(tmp_path: Path) -> None:
    with one_torch_thread():
        kw = {"credit": "step", "max_iterations": 2, "episode_jobs": 128, "seed": 1}
        a = train(tiny_args(tmp_path / "a", **kw))
        b = train(tiny_args(tmp_path / "b", **kw))
    assert a["hyperparameters"]["credit"] == "step"
    assert a["validation_reward"] == b["validation_reward"]
    assert a["iterations"] == 2
    x = torch.randn(32, features.ACTOR_DIM, generator=torch.Generator().manual_seed(0))
    sa, sb = (torch.jit.load(str(tmp_path / d / "actor.pt"))(x)  # type: ignore[no-untyped-call]
              for d in ("a", "b"))
    assert torch.equal(sa, sb)
