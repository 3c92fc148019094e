"""What the training reward measures: the gaps to the base policy in BSLD and mean wait, and their
normalisers.

The reward of an episode (``reward``) is the gap to the base policy on the same jobs, ``(base - rl)
/ base`` per metric, so it measures improvement rather than how easy the window was.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The reward's normaliser per metric: the base policy's value, floored (BSLD >= 1; a minute of mean
# wait counts as "no queue").
REWARD_FLOORS = {"bsld": 1.0, "wait_mean": 60.0}
# What manifests record as the reward (``reward_metric``), as every model since the reward was fixed
REWARD_METRIC = "bsld+wait"


def reward(base: dict[str, Any], rl: dict[str, Any]) -> float:
    """Mean of the BSLD and mean-wait gaps ``(base - rl) / base`` (improvement fractions; 0 when both
    are 0), clipped to [-1, 1]."""
    parts = [(float(base[key]) - float(rl[key])) / max(float(base[key]), floor)
             for key, floor in REWARD_FLOORS.items()]
    return float(np.clip(np.mean(parts), -1.0, 1.0))
