"""Inputs of the paper's *naive-RLTune* ablation (§5.1): the visible job features only, no engineered
cluster features and no heuristic sampling. Same normalisation as the full schema, so the ablation
differs from the full model in what it sees, not in scaling."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from rltune_daemon.domain.queue import QueueView
from rltune_daemon.features.build import raw_features
from rltune_daemon.features.sampling import F32
from rltune_daemon.features.schema import FEATURE_NAMES, SCHEMA_HASH

NAIVE_COLUMNS = ("req_gpus", "req_time", "wait", "req_cpus", "req_mem")
NAIVE_DIM = len(NAIVE_COLUMNS)
_IDX = np.array([FEATURE_NAMES.index(c) for c in NAIVE_COLUMNS], dtype=np.int64)


def naive_schema() -> dict[str, Any]:
    return {"columns": list(NAIVE_COLUMNS), "normalisation_from": SCHEMA_HASH}


NAIVE_SCHEMA_HASH = hashlib.sha256(json.dumps(naive_schema(), sort_keys=True).encode()).hexdigest()[:16]


def naive_features(view: QueueView) -> F32:
    """n x 5: requested GPUs, requested time, wait, requested CPUs and memory (normalised)."""
    return np.ascontiguousarray(raw_features(view)[:, _IDX])
