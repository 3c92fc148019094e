"""Warm start: teach the actor the base policy's ranking before PPO.

Rollouts under the *base* policy record, at every decision, the actor features of the first chunk and
the base policy's first ``top_m`` picks. The actor is then fitted to maximise the Plackett-Luce
likelihood of those picks. PPO therefore starts near the base policy (reward about 0) and spends its
budget on improving it, instead of first re-discovering it from a random network.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from rltune_daemon.domain.arrays import F64
from rltune_daemon.domain.history import RunHistory
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.learned import chunk_rank, feature_matrix
from rltune_daemon.train.network import Actor, plackett_luce_logp
from rltune_daemon.train.sampling import F32


class ImitationRecorder(Policy):
    """Behaves exactly like ``base`` and records (features, base top picks) per decision."""

    name = "imitation-recorder"

    def __init__(self, base: Policy, mode: str, top_m: int, history: RunHistory | None = None) -> None:
        self.base = base
        self.mode = mode
        self.top_m = top_m
        self.history = history  # the actor's hist_time input, as in rollouts
        self.samples: list[tuple[F32, np.ndarray[Any, np.dtype[np.int64]]]] = []

    def scores(self, view: QueueView) -> F64:
        s = self.base.scores(view)
        if self.history is not None:
            view = dataclasses.replace(view, history=self.history)
        cand = np.flatnonzero(chunk_rank(view) == 0)
        if len(cand) >= 2:
            order = np.lexsort((view.idx[cand], view.table.submit[view.idx[cand]], s[cand]))
            self.samples.append((feature_matrix(view, self.mode)[cand], order[: self.top_m].astype(np.int64)))
        return s

    def observe_finish(self, table: Any, row: int, runtime: float) -> None:
        self.base.observe_finish(table, row, runtime)
        if self.history is not None:
            self.history.learn_row(table, row, runtime)


def fit_imitation(actor: Actor, samples: list[tuple[F32, np.ndarray[Any, np.dtype[np.int64]]]], top_m: int,
                  epochs: int = 20, lr: float = 3e-3, seed: int = 0, batch: int = 256) -> float:
    """Fit ``actor`` to the recorded picks; returns the final mean negative log-likelihood per pick."""
    if not samples:
        return float("nan")
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(actor.parameters(), lr=lr)
    n_max = max(len(x) for x, _ in samples)
    dim = samples[0][0].shape[1]
    x = np.zeros((len(samples), n_max, dim), dtype=np.float32)
    mask = np.zeros((len(samples), n_max), dtype=np.bool_)
    picks = np.full((len(samples), top_m), -1, dtype=np.int64)
    for i, (xi, pi) in enumerate(samples):
        x[i, : len(xi)], mask[i, : len(xi)], picks[i, : len(pi)] = xi, True, pi
    xt, mt, pt = torch.from_numpy(x), torch.from_numpy(mask), torch.from_numpy(picks)
    n_picks = float((picks >= 0).sum())
    last = float("nan")
    for _ in range(epochs):
        order = rng.permutation(len(samples))
        total = 0.0
        for lo in range(0, len(order), batch):
            mb = torch.from_numpy(order[lo : lo + batch])
            loss = -plackett_luce_logp(actor(xt[mb]), mt[mb], pt[mb]).sum()
            opt.zero_grad()
            (loss / len(mb)).backward()  # type: ignore[no-untyped-call]
            opt.step()
            total += loss.item()
        last = total / n_picks
    return last
