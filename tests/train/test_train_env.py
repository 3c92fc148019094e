"""``RLTuneEnv``: gymnasium's own checker, seeded determinism, and the reward's meaning (an agent that
copies the base policy scores exactly 0)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from rltune_daemon.domain.queue import QueueView
from rltune_daemon.features import ACTOR_DIM
from rltune_daemon.policies.learned import MAX_QUEUE
from rltune_daemon.sim.controller import tiered_order
from rltune_daemon.train.env import RLTuneEnv
from rltune_daemon.train.reward import reward

EPISODE = 32


def test_gymnasium_env_checker_passes() -> None:
    env = RLTuneEnv("testbed", episode_jobs=EPISODE)
    check_env(env.unwrapped)
    obs_space, act_space = env.observation_space, env.action_space
    assert isinstance(obs_space, spaces.Dict) and isinstance(act_space, spaces.Discrete)
    assert obs_space["jobs"].shape == (MAX_QUEUE, ACTOR_DIM)
    assert act_space.n == MAX_QUEUE


def _rollout(env: RLTuneEnv, seed: int, actions: list[int]) -> list[tuple[dict[str, np.ndarray], float, bool,
                                                                         dict[str, Any]]]:
    obs, info = env.reset(seed=seed)
    out: list[tuple[dict[str, np.ndarray], float, bool, dict[str, Any]]] = [(obs, 0.0, False, info)]
    k = 0
    done = False
    while not done:
        obs, rew, done, truncated, info = env.step(actions[k % len(actions)])
        assert not truncated
        assert env.observation_space.contains(obs)
        out.append((obs, rew, done, info))
        k += 1
        assert k < 20 * EPISODE, "episode does not end"
    return out


def test_same_seed_same_episode() -> None:
    actions = [0, 1, 0, 2, 255, 1]  # 255 is past the queue: the base order is used
    a = _rollout(RLTuneEnv("testbed", episode_jobs=EPISODE, seed=0), 3, actions)
    b = _rollout(RLTuneEnv("testbed", episode_jobs=EPISODE, seed=0), 3, actions)
    assert len(a) == len(b) > 2
    for (oa, ra, da, ia), (ob, rb, db, ib) in zip(a, b, strict=True):
        np.testing.assert_array_equal(oa["jobs"], ob["jobs"])
        np.testing.assert_array_equal(oa["mask"], ob["mask"])
        assert (ra, da) == (rb, db)
        assert ia.keys() == ib.keys()
    assert a[-1][3]["rl"] == b[-1][3]["rl"]
    assert any(info.get("invalid_action") for *_, info in a)
    assert all(r == 0.0 for _, r, _, _ in a[:-1])  # the reward comes at the end of the episode
    assert -1.0 <= a[-1][1] <= 1.0
    # the same env object, reset with the same seed, replays the same episode too
    env = RLTuneEnv("testbed", episode_jobs=EPISODE, seed=0)
    _rollout(env, 5, actions)
    c = _rollout(env, 3, actions)
    assert [r for _, r, _, _ in c] == [r for _, r, _, _ in a]
    # different seeds draw different episodes
    starts = {env.reset(seed=s)[1]["episode_start"] for s in range(6)}
    assert len(starts) > 1


@pytest.mark.parametrize("reservations", [1, 500])
def test_copying_the_base_policy_earns_zero_reward(reservations: int) -> None:
    """Under EASY and under Slurm-like reservations alike: the agent's run and the base run of the
    reward use the same backfill."""
    env = RLTuneEnv("testbed", episode_jobs=48, base="sjf", seed=0, bf_reservations=reservations)
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)
        done, rew = False, float("nan")
        info: dict[str, Any] = {}
        while not done:
            # white-box: the base policy's first job among the observed candidates
            sim, rows = env._sim, env._pending
            assert sim is not None
            first = tiered_order(sim, rows, env._base.scores(QueueView(sim.table, rows, sim.now, sim.cl,
                                                                       sim.usage)))[0]
            action = int(np.flatnonzero(rows[env._cand] == first)[0])
            assert obs["mask"][action] == 1
            obs, rew, done, _, info = env.step(action)
        assert info["rl"]["bsld"] == pytest.approx(info["base"]["bsld"], abs=0)
        assert rew == 0.0
        assert rew == reward(info["base"], info["rl"])


def test_backfill_setting_reaches_the_base_run() -> None:
    """``bf_reservations`` is the simulator's, for the base run too: its metrics are a direct simulation
    with that setting, and on a congested batch they differ from EASY's. A value below 1 is refused."""
    from rltune_daemon.errors import UserError
    from rltune_daemon.policies import make_policy
    from rltune_daemon.sim import SimConfig, simulate
    from rltune_daemon.train.episodes import episode_workload

    seen = {}
    for r in (1, 500):
        env = RLTuneEnv("testbed", episode_jobs=256, base="fcfs", seed=0, bf_reservations=r)
        _, info = env.reset(seed=4)
        wl = episode_workload(env.train, info["episode_start"], env.episode_jobs)
        metrics = {k: v for k, v in env._base_metrics.items() if k != "classes"}  # the reward's class term
        assert metrics == simulate(wl, make_policy("fcfs"), SimConfig(bf_reservations=r)).metrics
        seen[r] = env._base_metrics["bsld"]
    assert seen[1] != seen[500]
    with pytest.raises(UserError, match="--bf-reservations 0"):
        RLTuneEnv("testbed", episode_jobs=EPISODE, bf_reservations=0)
