"""Per-decision credit: which decision of an episode earned its reward.

The paper gives one reward at the end of an episode, shared by every decision in it; with hundreds of
decisions per episode that signal says little about any one of them. Both metrics the reward measures
are sums over time, though: a job waiting ``dt`` seconds adds ``dt / max(run, 10)`` to its bounded
slowdown and ``dt`` to the total wait (DeepRM's ``-sum 1/T_j`` reward is the same decomposition). So
decision ``k`` is charged what the waiting jobs accrue between it and decision ``k + 1``, normalised by
the base policy's totals for the same jobs, exactly as the episode reward is. The charges of one
episode add up to the wait-driven part of ``-(rl / base)``: the end-of-episode reward minus terms no
ordering changes. Returns and advantages then come from GAE over the critic's values (``gae``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64
from rltune_daemon.errors import UserError
from rltune_daemon.sim.metrics import BSLD_BOUND

# The reward's normaliser per metric: the base policy's value, floored (BSLD >= 1; a minute of mean
# wait counts as "no queue"). The episode reward (``ppo.reward``) and the per-decision charges share it.
# Makespan stands for GPU utilisation: the same jobs on the same GPUs, so a window's utilisation is its
# GPU-seconds over GPUs x makespan, and a shorter makespan is a fuller cluster (on a busy cluster a short-
# first order leaves the wide jobs to run alone at the end).
REWARD_FLOORS = {"bsld": 1.0, "wait_mean": 60.0, "makespan": 1.0}


METRICS_CHOICES = ("bsld", "wait", "bsld+wait", "both", "bsld+wait+makespan")
# metrics that are no sum over time of what waiting jobs accrue: episode credit only
EPISODE_ONLY = ("both", "bsld+wait+makespan")


def metric_key(metric: str) -> str:
    """The metrics key of one ``--metric`` part (``wait`` is the mean wait)."""
    return "wait_mean" if metric == "wait" else metric


def checked_metric(metric: str) -> str:
    if metric not in METRICS_CHOICES:
        raise UserError(f"metric {metric!r}: expected one of {', '.join(METRICS_CHOICES)}")
    return metric


def metric_keys(metric: str) -> list[str]:
    """The metrics keys a ``--metric`` reads: ``both`` reads BSLD and mean wait, as ``bsld+wait`` does,
    and differs only in how the gaps combine (``ppo.reward``)."""
    return ["bsld", "wait_mean"] if metric == "both" else [metric_key(m) for m in metric.split("+")]


def reward_scale(base: dict[str, Any], key: str) -> float:
    return max(float(base[key]), REWARD_FLOORS[key])


def accrued(times: F64, submit: F64, start: F64, end_time: float, weight: F64) -> F64:
    """``sum_j weight_j * |[submit_j, start_j) & [t_k, t_k+1)|`` per decision ``k``; the span before the
    first decision is charged to it and the last decision runs to ``end_time``. Jobs that never
    started count as waiting until ``end_time``."""
    n = len(times)
    if not n:
        return np.zeros(0)
    lo = times.copy()
    lo[0] = min(float(times[0]), float(submit.min())) if len(submit) else float(times[0])
    hi = np.append(times[1:], max(end_time, float(times[-1])))
    began = np.where(np.isnan(start), end_time, start)
    # overlap of every job's waiting interval with every step's interval: (steps x jobs), chunked
    out = np.zeros(n)
    for a in range(0, n, 256):
        b = min(a + 256, n)
        ov = np.minimum(hi[a:b, None], began[None, :]) - np.maximum(lo[a:b, None], submit[None, :])
        out[a:b] = (np.maximum(ov, 0.0) * weight[None, :]).sum(axis=1)
    return out


def step_rewards(times: F64, submit: F64, start: F64, end: F64, base: dict[str, Any], metric: str) -> F64:
    """Per-decision rewards (negative, normalised by the base policy's totals; see module doc). Not for
    ``both`` (the worse of two gaps is no sum of charges; the trainer refuses that pair)."""
    ran = ~np.isnan(start)
    end_time = float(np.nanmax(end)) if ran.any() else float(times[-1]) if len(times) else 0.0
    run = np.where(ran, end - start, 0.0)
    n_jobs = max(len(submit), 1)
    parts = []
    for key in metric_keys(metric):
        weight = 1.0 / np.maximum(run, BSLD_BOUND) if key == "bsld" else np.ones(len(submit))
        parts.append(accrued(times, submit, start, end_time, weight) / (n_jobs * reward_scale(base, key)))
    return np.asarray(-np.mean(parts, axis=0), dtype=np.float64)


def gae(rewards: F64, values: F64, gamma: float, lam: float) -> tuple[F64, F64]:
    """Generalised advantage estimates and returns for one episode (terminal after the last step)."""
    n = len(rewards)
    adv = np.zeros(n)
    last = 0.0
    for k in range(n - 1, -1, -1):
        next_v = values[k + 1] if k + 1 < n else 0.0
        delta = rewards[k] + gamma * next_v - values[k]
        last = delta + gamma * lam * last
        adv[k] = last
    return adv, adv + values
