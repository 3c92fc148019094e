"""The stochastic actor used in rollouts, as a ``Policy`` so it plugs into both simulator modes.

At each decision it scores the oldest ``MAX_QUEUE`` pending jobs with the actor, draws a Plackett-Luce
ranking by sorting Gumbel-perturbed scores (an exact sample), and records the first ``top_m`` picks,
their log-probability and the critic's value. The picks decide which jobs start next; ranks below
``top_m`` rarely matter before the next decision, so leaving them out of the action keeps the policy
gradient's variance down. Jobs beyond the first chunk keep the deterministic chunked order that
``LearnedPolicy`` uses at inference.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from rltune_daemon import features
from rltune_daemon.domain.arrays import F64, JobTable
from rltune_daemon.domain.history import RunHistory
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.learned import chunk_rank, feature_matrix
from rltune_daemon.train.fastnet import FastActor, FastCritic, plackett_luce_logp_np
from rltune_daemon.train.network import Actor, Critic

F32 = np.ndarray[Any, np.dtype[np.float32]]


@dataclass
class Step:
    """One recorded decision: inputs of the first chunk, the picks (indices into it) and PPO stats."""

    actor_x: F32
    critic_x: F32
    picks: np.ndarray[Any, np.dtype[np.int64]]
    logp: float
    value: float


class SamplingPolicy(Policy):
    name = "rltune-sampling"

    def __init__(self, actor: Actor, critic: Critic, mode: str, rng: np.random.Generator, top_m: int = 16,
                 deterministic: bool = False, history: RunHistory | None = None) -> None:
        self.actor = FastActor(actor)
        self.critic = FastCritic(critic)
        self.mode = mode
        self.rng = rng
        self.top_m = top_m
        self.deterministic = deterministic
        self.steps: list[Step] = []
        self.history = history  # the hist_time input's runs (``train.history``); grows as jobs finish

    def observe_finish(self, table: JobTable, row: int, runtime: float) -> None:
        if self.history is not None:
            self.history.learn_row(table, row, runtime)

    def scores(self, view: QueueView) -> F64:
        n = len(view.idx)
        if not n:
            return np.zeros(0)
        if self.history is not None:
            view = dataclasses.replace(view, history=self.history)
        fs = features.build(view) if self.mode == "sampled" else None
        x_all = fs.actor if fs is not None else feature_matrix(view, self.mode)
        s_all: F64 = self.actor(x_all)
        chunk = chunk_rank(view)
        out = (chunk * 4.0 - np.tanh(s_all / 8.0)).astype(np.float64)
        cand = np.flatnonzero(chunk == 0)
        s = s_all[cand]
        if len(cand) < 2 or self.deterministic:
            return out
        perm = np.argsort(-(s + self.rng.gumbel(size=len(s))), kind="stable")
        out[cand[perm]] = -2.0 + np.arange(len(perm)) / len(perm)  # sampled order first, inside [-2, -1)
        picks = perm[: self.top_m].astype(np.int64)
        crit = (fs.critic if fs is not None else features.critic_features(view))[cand]
        logp = plackett_luce_logp_np(s, picks)
        self.steps.append(Step(x_all[cand], crit, picks, logp, self.critic(crit)))
        return out
