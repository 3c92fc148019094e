"""Slurm's classic fair-share factor, 2^(-U/S), with usage decaying at PriorityDecayHalfLife.

U is the user's share of decayed GPU-seconds (running jobs count as they run); S = 1/N for N users
seen so far (equal shares, like a flat association tree). The simulator feeds starts and finishes;
a live Slurm computes this itself.
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.arrays import F64, I64


class UsageTracker:
    def __init__(self, n_users: int, half_life: float = 7 * 86400.0) -> None:
        self.half_life = half_life
        self.done = np.zeros(max(n_users, 1))        # decayed usage of finished work, valued at ``t_ref``
        self.t_ref = 0.0
        self.run_gpus = np.zeros(max(n_users, 1))    # GPUs of running jobs per user
        self.run_gstart = np.zeros(max(n_users, 1))  # sum of gpus * start of running jobs per user
        self.seen = np.zeros(max(n_users, 1), dtype=np.bool_)

    def _decay_to(self, now: float) -> None:
        if now > self.t_ref:
            self.done *= 2.0 ** (-(now - self.t_ref) / self.half_life)
            self.t_ref = now

    def submit(self, user: int) -> None:
        self.seen[user] = True

    def start(self, user: int, gpus: int, now: float) -> None:
        self.seen[user] = True
        self.run_gpus[user] += gpus
        self.run_gstart[user] += gpus * now

    def finish(self, user: int, gpus: int, start: float, now: float) -> None:
        self._decay_to(now)
        self.run_gpus[user] -= gpus
        self.run_gstart[user] -= gpus * start
        self.done[user] += gpus * (now - start)

    def usage(self, now: float) -> F64:
        self._decay_to(now)
        running = np.maximum(self.run_gpus * now - self.run_gstart, 0.0)
        return self.done + running

    def factors(self, users: I64, now: float) -> F64:
        u = self.usage(now)
        total = float(u.sum())
        n = max(int(self.seen.sum()), 1)
        if total <= 0.0:
            return np.ones(len(users))
        share = 1.0 / n
        return 2.0 ** (-(u[users] / total) / share)
