"""Rollout pieces: what ``SamplingPolicy`` records is what PPO recomputes, its deterministic mode is the
deployed ``LearnedPolicy``, the reward formula, and one PPO update moving log-probabilities the right way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from train_helpers import one_torch_thread, random_view, tiny_args

from rltune_daemon import features
from rltune_daemon.policies.learned import LearnedPolicy, chunk_rank
from rltune_daemon.train.network import Actor, Critic, plackett_luce_logp
from rltune_daemon.train.ppo import UPDATE_STATS, ppo_update
from rltune_daemon.train.reward import reward
from rltune_daemon.train.sampling import SamplingPolicy, Step


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


def _nets(seed: int) -> tuple[Actor, Critic]:
    torch.manual_seed(seed)
    return Actor(features.ACTOR_DIM), Critic(features.CRITIC_DIM)


def test_recorded_steps_match_the_torch_networks() -> None:
    from rltune_daemon.sim import Simulator
    from rltune_daemon.sim.daemon import planner_controller
    from rltune_daemon.traces import load_workload, split_by_time
    from rltune_daemon.train.episodes import episode_workload

    actor, critic = _nets(0)
    policy = SamplingPolicy(actor, critic, "sampled", np.random.default_rng(0), top_m=4)
    train, _ = split_by_time(load_workload("testbed", estimates="user", seed=0))
    Simulator(episode_workload(train, 100, 96), planner_controller(policy, "daemon", placement=False)).run()
    assert len(policy.steps) > 5
    for st in policy.steps:
        n = len(st.actor_x)
        assert n >= 2 and st.actor_x.shape == (n, features.ACTOR_DIM) and st.critic_x.shape == (n, 5)
        assert len(st.picks) == min(4, n) and len(set(st.picks.tolist())) == len(st.picks)
        assert ((st.picks >= 0) & (st.picks < n)).all()
        x = torch.from_numpy(st.actor_x)
        with torch.no_grad():
            logp = plackett_luce_logp(actor(x)[None], torch.ones(1, n, dtype=torch.bool),
                                      torch.from_numpy(st.picks)[None]).item()
            value = critic(torch.from_numpy(st.critic_x)[None], torch.ones(1, n, dtype=torch.bool)).item()
        assert st.logp == pytest.approx(logp, abs=1e-4)  # PPO's first ratio is 1
        assert st.value == pytest.approx(value, abs=1e-5)


def test_sampled_order_follows_the_picks() -> None:
    actor, critic = _nets(1)
    policy = SamplingPolicy(actor, critic, "sampled", np.random.default_rng(1), top_m=5)
    view = random_view(30, seed=1)
    s = policy.scores(view)
    (st,) = policy.steps
    np.testing.assert_array_equal(np.argsort(s, kind="stable")[:5], st.picks)  # cand = all 30 jobs here
    # the sample is random: another draw gives another ranking, the same generator state the same one
    again = SamplingPolicy(actor, critic, "sampled", np.random.default_rng(1), top_m=5)
    np.testing.assert_array_equal(again.scores(view), s)
    other = SamplingPolicy(actor, critic, "sampled", np.random.default_rng(2), top_m=5)
    assert not np.array_equal(other.scores(view), s)


def test_deterministic_sampling_policy_is_the_learned_policy() -> None:
    actor, critic = _nets(2)
    deployed = LearnedPolicy(torch.jit.script(actor.eval()), {"features": "sampled"})
    det = SamplingPolicy(actor, critic, "sampled", np.random.default_rng(0), deterministic=True)
    for n, seed in ((1, 0), (25, 1), (300, 2)):
        view = random_view(n, seed)
        got = det.scores(view)
        want = deployed.scores(view)
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
        assert chunk_rank(view).max() == (n - 1) // 256
    assert det.steps == []


def test_reward_by_hand() -> None:
    """The mean of three gaps to the base policy: BSLD, mean wait, and the worst size class's mean wait
    (classes of at least 20 jobs); 0 for the class term when the metrics carry no classes."""
    classes = {"1": {"jobs": 30, "wait_mean": 100.0}, "5-8": {"jobs": 20, "wait_mean": 1000.0},
               "9-16": {"jobs": 5, "wait_mean": 50.0}}
    base = {"bsld": 4.0, "wait_mean": 600.0, "classes": classes}
    same = {"bsld": 2.0, "wait_mean": 600.0, "classes": classes}
    assert reward(base, same) == pytest.approx(0.5 / 3)
    assert reward(base, {**same, "wait_mean": 300.0}) == pytest.approx(1.0 / 3)
    # halving the 1-GPU jobs' wait by doubling the 5-8-GPU jobs' is scored by the loss
    paid = {**classes, "1": {"jobs": 30, "wait_mean": 50.0}, "5-8": {"jobs": 20, "wait_mean": 2000.0}}
    assert reward(base, {**same, "classes": paid}) == pytest.approx((0.5 + 0.0 - 1.0) / 3)
    # a class with fewer than 20 jobs is not scored on its own
    few = {**classes, "9-16": {"jobs": 5, "wait_mean": 5000.0}}
    assert reward(base, {**same, "classes": few}) == pytest.approx(0.5 / 3)
    no_classes = reward({"bsld": 4.0, "wait_mean": 600.0}, {"bsld": 4.0, "wait_mean": 900.0})
    assert no_classes == pytest.approx(-0.5 / 3)
    # floors: BSLD is at least 1, a minute of mean wait is "no queue"
    assert reward({"bsld": 0.5, "wait_mean": 0.0}, {"bsld": 0.5, "wait_mean": 30.0}) == (
        pytest.approx(-0.5 / 3))
    # clipped to [-1, 1]
    assert reward(base, {"bsld": 40.0, "wait_mean": 6000.0, "classes": paid}) == -1.0


def _synthetic_steps() -> list[Step]:
    rng = np.random.default_rng(7)
    steps = []
    for n in (6, 9):
        steps.append(Step(rng.normal(0, 1, (n, features.ACTOR_DIM)).astype(np.float32),
                          rng.normal(0, 1, (n, 5)).astype(np.float32), np.array([2, 0, 4], dtype=np.int64),
                          0.0, 0.0))
    return steps


def _logp(actor: Actor, steps: list[Step]) -> list[float]:
    with torch.no_grad():
        return [plackett_luce_logp(actor(torch.from_numpy(s.actor_x))[None],
                                   torch.ones(1, len(s.actor_x), dtype=torch.bool),
                                   torch.from_numpy(s.picks)[None]).item() for s in steps]


def _values(critic: Critic, steps: list[Step]) -> list[float]:
    with torch.no_grad():
        return [critic(torch.from_numpy(s.critic_x)[None],
                       torch.ones(1, len(s.critic_x), dtype=torch.bool)).item() for s in steps]


def test_ppo_update_favours_the_better_decision(tmp_path: Path) -> None:
    actor, critic = _nets(3)
    steps = _synthetic_steps()
    before = _logp(actor, steps)
    v_before = _values(critic, steps)
    for s, lp in zip(steps, before, strict=True):
        s.logp = lp
    args = tiny_args(tmp_path, update_epochs=4, lr=1e-2, ent_coef=0.0)
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=args.lr)
    stats = ppo_update(actor, critic, opt, steps, np.array([1.0, -1.0]), args, np.random.default_rng(0))
    assert set(stats) == set(UPDATE_STATS) and all(np.isfinite(v) for v in stats.values())
    after = _logp(actor, steps)
    assert after[0] > before[0]  # positive advantage: more likely
    assert after[1] < before[1]  # negative advantage: less likely
    # the critic moved towards the returns
    v_after = _values(critic, steps)
    assert v_after[0] > v_before[0] and v_after[1] < v_before[1]
