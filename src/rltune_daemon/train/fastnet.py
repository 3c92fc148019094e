"""Numpy copies of the actor and critic for rollouts.

A rollout scores a few dozen to a few hundred jobs per decision, thousands of times per episode; at
that size torch's per-operation overhead costs more than the arithmetic. These copies compute the same
functions (float32 weights, float64 arithmetic) from the networks' ``state_dict``; PPO recomputes
every log-probability with the torch networks, so rollouts only need to be close, and they are
(``tests/train`` checks agreement to 1e-5).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rltune_daemon.train.network import Actor, Critic

A = np.ndarray[Any, np.dtype[np.float64]]


def _layers(module: torch.nn.Sequential) -> list[tuple[A, A]]:
    return [(m.weight.detach().numpy().astype(np.float64).T, m.bias.detach().numpy().astype(np.float64))
            for m in module if isinstance(m, torch.nn.Linear)]


class FastActor:
    def __init__(self, actor: Actor) -> None:
        self.layers = _layers(actor.net)

    def __call__(self, x: np.ndarray[Any, Any]) -> A:
        h = np.asarray(x, dtype=np.float64)
        for i, (w, b) in enumerate(self.layers):
            h = h @ w + b
            if i < len(self.layers) - 1:
                h = np.tanh(h)
        return h[..., 0]


class FastCritic:
    def __init__(self, critic: Critic) -> None:
        self.embed = _layers(critic.embed)
        self.head = _layers(critic.head)

    def __call__(self, x: np.ndarray[Any, Any]) -> float:
        """Value of one decision: ``x`` is jobs x features (all real jobs)."""
        (we, be), = self.embed
        h = np.tanh(np.asarray(x, dtype=np.float64) @ we + be)
        z = np.concatenate([h.mean(axis=0), h.max(axis=0)]) if len(h) else np.zeros(2 * len(be))
        (w1, b1), (w2, b2) = self.head
        return float((np.tanh(z @ w1 + b1) @ w2 + b2)[0])


def plackett_luce_logp_np(scores: A, picks: np.ndarray[Any, np.dtype[np.int64]]) -> float:
    """Log-probability of ``picks`` (in order) as the first picks of a Plackett-Luce ranking."""
    s = np.asarray(scores, dtype=np.float64)
    avail = np.ones(len(s), dtype=np.bool_)
    total = 0.0
    for j in picks:
        m = s[avail].max()
        total += float(s[j] - (m + np.log(np.exp(s[avail] - m).sum())))
        avail[j] = False
    return total
