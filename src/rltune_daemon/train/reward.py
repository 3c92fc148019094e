"""What the training reward measures: the gaps to the base policy in BSLD, in mean wait and in the
mean wait of the job-size class that fares worst, and their normalisers.

The reward of an episode (``reward``) is the gap to the base policy on the same jobs, ``(base - rl)
/ base`` per metric, so it measures improvement rather than how easy the window was. A lower mean is no
win when one class of jobs pays for it (``harm``): the third term is the worst gap of any size class
with at least ``CLASS_MIN_JOBS`` jobs in the episode (the min-max fairness of RLScheduler's
``HPCEnvFair``, with size classes as the groups), so an order that halves the small jobs' wait by
doubling the large jobs' is scored by the large jobs' loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rltune_daemon.domain.workload import Workload
from rltune_daemon.harm import wait_by_class
from rltune_daemon.sim.engine import SimResult

# The reward's normaliser per metric: the base policy's value, floored (BSLD >= 1; a minute of mean
# wait counts as "no queue").
REWARD_FLOORS = {"bsld": 1.0, "wait_mean": 60.0}
# What manifests record as the reward (``reward_metric``): the models trained before the class term
# were rewarded with the first, every later one with the second
REWARD_METRIC_MEANS = "bsld+wait"
REWARD_METRIC = "bsld+wait+worst-class"
CLASS_MIN_JOBS = 20  # a class with fewer jobs in an episode is too noisy to score on its own
CLASSES = "classes"  # the metrics key of the per-class waits (``class_waits``)


def scored(result: SimResult, workload: Workload) -> dict[str, Any]:
    """A run of ``workload``'s metrics with the per-class waits the reward's class term needs (key
    ``CLASSES``)."""
    submit = np.array([j.submit for j in workload.jobs], dtype=np.float64)
    sizes = np.array([j.gpus for j in workload.jobs], dtype=np.int64)
    return {**result.metrics, CLASSES: wait_by_class(result.start - submit, sizes)}


def worst_class_gap(base: dict[str, Any], rl: dict[str, Any]) -> float:
    """The smallest ``(base - rl) / base`` mean-wait gap of a size class with ``CLASS_MIN_JOBS`` jobs
    or more (0 when no class has that many, or the metrics carry no classes)."""
    b, r = base.get(CLASSES, {}), rl.get(CLASSES, {})
    gaps = [(b[c]["wait_mean"] - r[c]["wait_mean"]) / max(b[c]["wait_mean"], REWARD_FLOORS["wait_mean"])
            for c in b if c in r and b[c]["jobs"] >= CLASS_MIN_JOBS]
    return float(min(gaps, default=0.0))


def reward(base: dict[str, Any], rl: dict[str, Any]) -> float:
    """Mean of the BSLD, mean-wait and worst-class gaps ``(base - rl) / base`` (improvement fractions; 0
    when both are 0), clipped to [-1, 1]."""
    parts = [(float(base[key]) - float(rl[key])) / max(float(base[key]), floor)
             for key, floor in REWARD_FLOORS.items()]
    parts.append(worst_class_gap(base, rl))
    return float(np.clip(np.mean(parts), -1.0, 1.0))
