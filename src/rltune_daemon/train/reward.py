"""What the training reward measures: the gaps to the base policy in BSLD and mean wait, their
normalisers, and how a ``metric`` setting combines them.

The reward of an episode (``reward``) is the gap to the base policy on the same jobs, ``(base - rl)
/ base`` per metric, so it measures improvement rather than how easy the window was.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rltune_daemon.errors import UserError

# The reward's normaliser per metric: the base policy's value, floored (BSLD >= 1; a minute of mean
# wait counts as "no queue").
REWARD_FLOORS = {"bsld": 1.0, "wait_mean": 60.0}


METRICS_CHOICES = ("bsld+wait", "both")


def checked_metric(metric: str) -> str:
    if metric not in METRICS_CHOICES:
        raise UserError(f"metric {metric!r}: expected one of {', '.join(METRICS_CHOICES)}")
    return metric


def reward(base: dict[str, Any], rl: dict[str, Any], metric: str) -> float:
    """Mean of the BSLD and mean-wait gaps ``(base - rl) / base`` (improvement fractions; 0 when both
    are 0).

    ``both`` takes the smaller gap instead: a window scores as well as its worse metric, so a search
    cannot buy wait with slowdown (or back), which the mean of the two lets it do when the target is
    lower BSLD *and* lower wait."""
    checked_metric(metric)
    parts = [(float(base[key]) - float(rl[key])) / max(float(base[key]), floor)
             for key, floor in REWARD_FLOORS.items()]
    return float(np.clip(min(parts) if metric == "both" else np.mean(parts), -1.0, 1.0))

