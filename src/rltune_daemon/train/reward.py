"""What the training reward measures: the metrics a ``metric`` setting names and their normalisers.

The reward of an episode (``ppo.reward``) is the gap to the base policy on the same jobs, ``(base - rl)
/ base`` per metric, so it measures improvement rather than how easy the window was.
"""

from __future__ import annotations

from typing import Any

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
    and differs only in how the gaps combine (``ppo.reward``)."""
    return ["bsld", "wait_mean"] if metric == "both" else [metric_key(m) for m in metric.split("+")]


def reward_scale(base: dict[str, Any], key: str) -> float:
    return max(float(base[key]), REWARD_FLOORS[key])
