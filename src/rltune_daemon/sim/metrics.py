"""Scheduling metrics of one simulated run (paper §4.4).

Bounded slowdown uses a 10 s bound: ``max((wait + run) / max(run, 10), 1)``. Utilisation is allocated
GPU-seconds over ``total GPUs x makespan``, the makespan running from the first submit to the last end.
A longer makespan lowers it although the GPUs were as busy while jobs kept arriving, and a shorter one
can hide GPUs left idle while the queue was full, so ``utilization_arrival`` also counts the GPU-seconds
allocated between the first and the last submit over ``total GPUs x that span``: the GPUs a policy
leaves idle while work arrives. ``wait_max`` is the longest any job waited: the number a starvation
guarantee is judged by.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64

BSLD_BOUND = 10.0


def bounded_slowdown(wait: F64, run: F64) -> F64:
    return np.maximum((wait + run) / np.maximum(run, BSLD_BOUND), 1.0)


def summarize(submit: F64, start: F64, end: F64, gpus: F64, total_gpus: int) -> dict[str, Any]:
    """Metrics over the jobs that ran (``start`` not NaN)."""
    ran = ~np.isnan(start)
    if not ran.any():
        return {"jobs": 0}
    s, b, e, g = submit[ran], start[ran], end[ran], gpus[ran]
    wait = b - s
    run = e - b
    makespan = float(e.max() - s.min())
    busy = float((g * run).sum())
    first, last = float(s.min()), float(s.max())
    span = last - first
    in_span = float((g * np.maximum(np.minimum(e, last) - np.maximum(b, first), 0.0)).sum())
    return {
        "jobs": int(ran.sum()),
        "wait_mean": float(wait.mean()),
        "wait_median": float(np.median(wait)),
        "wait_p95": float(np.percentile(wait, 95)),
        "wait_p99": float(np.percentile(wait, 99)),
        "wait_max": float(wait.max()),
        "jct_mean": float((e - s).mean()),
        "bsld": float(bounded_slowdown(wait, run).mean()),
        "utilization": busy / (total_gpus * makespan) if makespan > 0 and total_gpus > 0 else 0.0,
        "utilization_arrival": in_span / (total_gpus * span) if span > 0 and total_gpus > 0 else 0.0,
        "makespan": makespan,
    }
