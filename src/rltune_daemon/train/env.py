"""``RLTuneEnv``: the scheduling problem as a ``gymnasium.Env``, for users who train with SB3 or RLlib.

One episode is a batch of ``episode_jobs`` consecutive jobs from the training split, simulated from an
idle cluster (the same episodes our PPO trainer uses). At every scheduling decision the agent sees the
oldest ``MAX_QUEUE`` pending jobs (``jobs``: actor features, ``mask``: real rows) and picks the job to put
first; the others follow in the base policy's order. The reward is 0 until the episode ends, then the
normalised gap to the base policy on the same batch (``train.reward``), as in the paper. Both runs use the
simulator's backfill with ``bf_reservations`` (1: EASY; 500: Slurm's ``sched/backfill``), as
``rltune train --bf-reservations`` does.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rltune_daemon import features as feats
from rltune_daemon.domain.arrays import I64
from rltune_daemon.domain.history import RunHistory
from rltune_daemon.domain.workload import Workload
from rltune_daemon.features.naive import NAIVE_DIM
from rltune_daemon.policies import make_policy
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.learned import MAX_QUEUE, chunk_rank, feature_matrix
from rltune_daemon.sim import simulate
from rltune_daemon.sim.config import SimConfig, checked_reservations
from rltune_daemon.sim.controller import Controller, tiered_order
from rltune_daemon.sim.engine import SimResult, Simulator
from rltune_daemon.traces import load_workload, split_by_time
from rltune_daemon.train.episodes import episode_workload
from rltune_daemon.train.history import EpisodeHistory
from rltune_daemon.train.reward import reward, scored

OBS_BOUND = 10.0


class _External(Controller):
    name = "agent"
    external = True


class RLTuneEnv(gym.Env[dict[str, np.ndarray], int]):
    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self, trace: str = "testbed", episode_jobs: int = 256, base: str = "sjf",
                 features: str = "sampled", seed: int = 0,
                 opts: dict[str, str] | None = None, estimates: str = "user", bf_reservations: int = 1,
                 cluster: str | None = None) -> None:
        self.sim_config = SimConfig(bf_reservations=checked_reservations(bf_reservations))
        workload = load_workload(trace, estimates=estimates, seed=seed, cluster=cluster, **(opts or {}))
        self.train, _ = split_by_time(workload)
        self.episode_jobs = min(episode_jobs, len(self.train.jobs))
        self.base_name = base
        self.mode = features

        dim = feats.ACTOR_DIM if features == "sampled" else NAIVE_DIM
        self.observation_space = spaces.Dict({  # type: ignore[assignment]
            "jobs": spaces.Box(-OBS_BOUND, OBS_BOUND, (MAX_QUEUE, dim), np.float32),
            "mask": spaces.MultiBinary(MAX_QUEUE),
        })
        self.action_space = spaces.Discrete(MAX_QUEUE)  # type: ignore[assignment]
        self._steps: Generator[I64, I64, SimResult] | None = None
        self._sim: Simulator | None = None
        self._pending: I64 = np.zeros(0, dtype=np.int64)
        self._cand: I64 = np.zeros(0, dtype=np.int64)
        self._base: Policy = make_policy(base)
        self._base_metrics: dict[str, Any] = {}
        self._window: Workload | None = None
        self._hist = EpisodeHistory(self.train)
        self._history: RunHistory | None = None  # the hist_time input: the runs before the episode

    def _obs(self) -> dict[str, np.ndarray]:
        assert self._sim is not None
        sim, rows = self._sim.view, self._pending
        view = sim.queue_view(rows, self._history)
        order = np.lexsort((rows, sim.table.submit[rows]))
        self._cand = order[chunk_rank(view)[order] == 0][:MAX_QUEUE]
        x = feature_matrix(view, self.mode)[self._cand]
        jobs = np.zeros(self.observation_space["jobs"].shape, dtype=np.float32)  # type: ignore[index]
        jobs[: len(x)] = np.clip(x, -OBS_BOUND, OBS_BOUND)
        mask = np.zeros(MAX_QUEUE, dtype=np.int8)
        mask[: len(x)] = 1
        return {"jobs": jobs, "mask": mask}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        start = int(self.np_random.integers(0, len(self.train.jobs) - self.episode_jobs + 1))
        wl = episode_workload(self.train, start, self.episode_jobs)
        self._base = self._hist.prime(make_policy(self.base_name), start)
        self._base_metrics = scored(simulate(wl, self._hist.prime(make_policy(self.base_name), start),
                                             self.sim_config), wl)
        self._window = wl
        self._history = self._hist.history(start) if self.mode == "sampled" else None
        self._sim = Simulator(wl, _External(), self.sim_config)
        self._steps = self._sim.iterate()
        try:
            self._pending = next(self._steps)
        except StopIteration:  # nothing ever waited for a decision
            self._steps = None
            return self._empty(), {"episode_start": start}
        return self._obs(), {"episode_start": start}

    def _empty(self) -> dict[str, np.ndarray]:
        return {"jobs": np.zeros(self.observation_space["jobs"].shape, dtype=np.float32),  # type: ignore[index]
                "mask": np.zeros(MAX_QUEUE, dtype=np.int8)}

    def step(self, action: int) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._steps is None or self._sim is None:
            return self._empty(), 0.0, True, False, {}
        sim, rows = self._sim.view, self._pending
        base_order = tiered_order(sim, rows, self._base.scores(sim.queue_view(rows)))
        info: dict[str, Any] = {}
        a = int(action)
        if 0 <= a < len(self._cand):
            first = rows[self._cand[a]]
            order = np.concatenate([[first], base_order[base_order != first]]).astype(np.int64)
        else:
            info["invalid_action"] = True
            order = base_order
        try:
            self._pending = self._steps.send(order)
        except StopIteration as done:
            result: SimResult = done.value
            self._steps = None
            assert self._window is not None  # set by reset(), as _steps is
            rl = scored(result, self._window)
            info.update(rl=rl, base=self._base_metrics)
            return self._empty(), reward(self._base_metrics, rl), True, False, info
        return self._obs(), 0.0, False, False, info
