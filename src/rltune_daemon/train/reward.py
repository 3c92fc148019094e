"""What the training reward measures: the metrics a ``metric`` setting names, their normalisers, and
the reward itself.

The reward of an episode (``reward``) is the gap to the base policy on the same jobs, ``(base - rl)
/ base`` per metric, so it measures improvement rather than how easy the window was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rltune_daemon.errors import UserError

# The reward's normaliser per metric: the base policy's value, floored (BSLD >= 1; a minute of mean
# wait counts as "no queue"). Makespan stands for GPU utilisation: the same jobs on the same GPUs, so a
# window's utilisation is its GPU-seconds over GPUs x makespan, and a shorter makespan is a fuller cluster
# (on a busy cluster a short-first order leaves the wide jobs to run alone at the end).
REWARD_FLOORS = {"bsld": 1.0, "wait_mean": 60.0, "makespan": 1.0}


METRICS_CHOICES = ("bsld", "wait", "bsld+wait", "both", "bsld+wait+makespan")


def metric_key(metric: str) -> str:
    """The metrics key of one ``metric`` part (``wait`` is the mean wait)."""
    return "wait_mean" if metric == "wait" else metric


def checked_metric(metric: str) -> str:
    if metric not in METRICS_CHOICES:
        raise UserError(f"metric {metric!r}: expected one of {', '.join(METRICS_CHOICES)}")
    return metric


def metric_keys(metric: str) -> list[str]:
    """The metrics keys a ``metric`` reads: ``both`` reads BSLD and mean wait, as ``bsld+wait`` does,
    and differs only in how the gaps combine (``reward``)."""
    return ["bsld", "wait_mean"] if metric == "both" else [metric_key(m) for m in metric.split("+")]


def reward_scale(base: dict[str, Any], key: str) -> float:
    return max(float(base[key]), REWARD_FLOORS[key])


def reward(base: dict[str, Any], rl: dict[str, Any], metric: str) -> float:
    """Mean over the metrics of ``(base - rl) / base`` (improvement fraction; 0 when both are 0).

    ``both`` takes the smaller gap instead: a window scores as well as its worse metric, so a search
    cannot buy wait with slowdown (or back), which the mean of the two lets it do when the target is
    lower BSLD *and* lower wait."""
    parts = [(float(base[key]) - float(rl[key])) / reward_scale(base, key) for key in metric_keys(metric)]
    return float(np.clip(min(parts) if metric == "both" else np.mean(parts), -1.0, 1.0))


def rival_names(rivals: str) -> list[str]:
    return [r.strip() for r in rivals.split(",") if r.strip()]


def window_reward(base: dict[str, Any], rivals: Sequence[dict[str, Any]], rl: dict[str, Any],
                  metric: str) -> float:
    """The episode's reward: against the base policy, or with ``rivals`` the smallest of the rewards
    against the base and each rival, so a window counts as won only where every one of them is beaten.
    With ``metric = "both"`` that is lower BSLD *and* wait than each as a reward,
    where the base alone lets a search trade toward a heuristic better in the other metric (FCFS's wait
    on the testbed, against multifactor as base)."""
    return min(reward(ref, rl, metric) for ref in (base, *rivals))
