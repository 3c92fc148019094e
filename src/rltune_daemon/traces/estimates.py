"""Requested time limits (what users *ask for*), the only runtime signal schedulers and backfill see.

Most public GPU traces record how long jobs ran but not what they requested, so we model it. The
``user`` model follows the empirical picture of Tsafrir, Etsion & Feitelson, "Modeling User Runtime
Estimates" (JSSPP 2005, LNCS 3834): users pick from a few round values, the site maximum is among the
most popular requests, and most estimates are large over-estimates. Concretely, per job:

* with probability ``p_max`` the request is the site maximum ``cap``;
* otherwise ``runtime x f`` with ``log f ~ N(log median_factor, sigma)`` and ``f >= 1``, rounded UP to
  the next value of ``LADDER`` (5/10/15/30 min, 1/2/4/8/12 h, 1/2/3/7 d, ...), then capped at ``cap``;
* a job that ran longer than ``cap`` must have had a longer limit (a long-job QOS): it gets its runtime
  rounded up to the ladder.

So ``time_limit >= runtime`` always holds, which the simulator's backfill relies on. ``p_max``,
``median_factor`` and ``sigma`` are our assumptions (documented in docs/traces.md), not fitted values.
Everything is vectorised and deterministic for a given seed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from rltune_daemon.domain.arrays import F64
from rltune_daemon.domain.jobs import Job
from rltune_daemon.traces.sampling import rng_for

MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0
DEFAULT_CAP = 7 * DAY

LADDER: tuple[float, ...] = (
    1 * MINUTE,
    2 * MINUTE,
    5 * MINUTE,
    10 * MINUTE,
    15 * MINUTE,
    20 * MINUTE,
    30 * MINUTE,
    45 * MINUTE,
    1 * HOUR,
    90 * MINUTE,
    2 * HOUR,
    3 * HOUR,
    4 * HOUR,
    6 * HOUR,
    8 * HOUR,
    12 * HOUR,
    16 * HOUR,
    1 * DAY,
    2 * DAY,
    3 * DAY,
    4 * DAY,
    5 * DAY,
    7 * DAY,
    10 * DAY,
    14 * DAY,
    21 * DAY,
    30 * DAY,
    45 * DAY,
    60 * DAY,
    90 * DAY,
    120 * DAY,
    180 * DAY,
    365 * DAY,
)
_LADDER = np.array(LADDER, dtype=np.float64)

ModelName = Literal["oracle", "user"]


@dataclass(frozen=True)
class UserEstimateModel:
    """Parameters of the ``user`` model (see module docstring)."""

    p_max: float = 0.15
    median_factor: float = 2.0
    sigma: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.p_max <= 1.0:
            raise ValueError(f"p_max must be in [0, 1], got {self.p_max}")
        if self.median_factor < 1.0 or self.sigma < 0.0:
            raise ValueError("median_factor must be >= 1 and sigma >= 0")


DEFAULT_MODEL = UserEstimateModel()


def round_up(seconds: F64) -> F64:
    """Next ``LADDER`` value >= each element; beyond the ladder, whole days (rounded up)."""
    idx = np.searchsorted(_LADDER, seconds, side="left")
    beyond = idx >= len(_LADDER)
    out = _LADDER[np.minimum(idx, len(_LADDER) - 1)]
    return np.where(beyond, np.ceil(seconds / DAY) * DAY, out)


def user_limits(
    runtime: F64, seed: int, cap: float = DEFAULT_CAP, model: UserEstimateModel = DEFAULT_MODEL
) -> F64:
    """Modelled requested time per job (seconds); ``>= runtime`` element-wise."""
    if not cap > 0 or not math.isfinite(cap):
        raise ValueError(f"cap must be a positive finite number of seconds, got {cap}")
    rng = rng_for(seed, "estimates")
    n = len(runtime)
    wants_max = rng.random(n) < model.p_max
    factor = np.maximum(np.exp(rng.normal(math.log(model.median_factor), model.sigma, n)), 1.0)
    est = np.minimum(round_up(runtime * factor), cap)
    est = np.where(wants_max, cap, est)
    over = runtime > cap
    est = np.where(over, round_up(runtime), est)
    return np.maximum(est, runtime)


def estimate_limits(
    runtime: F64,
    model: Literal["oracle", "user", "trace"],
    seed: int,
    cap: float = DEFAULT_CAP,
    trace_limits: F64 | None = None,
    params: UserEstimateModel = DEFAULT_MODEL,
) -> tuple[F64, dict[str, int]]:
    """Time limits for ``runtime`` under ``model`` plus counts for ``Workload.meta``.

    ``trace`` keeps ``trace_limits`` where known (finite, > 0), fills unknown ones from the ``user``
    model and raises limits below the runtime to the runtime (jobs may overrun their limit slightly
    before Slurm kills them; the simulator needs ``limit >= runtime``).
    """
    runtime = np.asarray(runtime, dtype=np.float64)
    counts: dict[str, int] = {"over_cap": int(np.count_nonzero(runtime > cap))}
    if model == "oracle":
        return runtime.copy(), {}
    modelled = user_limits(runtime, seed, cap, params)
    if model == "user":
        return modelled, counts
    if trace_limits is None:
        raise ValueError("model 'trace' needs trace_limits")
    known = np.isfinite(trace_limits) & (trace_limits > 0)
    limits = np.where(known, trace_limits, modelled)
    raised = known & (limits < runtime)
    counts = {"filled_by_user_model": int(np.count_nonzero(~known)), "raised_to_runtime": int(raised.sum())}
    return np.maximum(limits, runtime), counts


def apply_estimates(
    jobs: Sequence[Job],
    model: Literal["oracle", "user", "trace"],
    seed: int,
    cap: float = DEFAULT_CAP,
    params: UserEstimateModel = DEFAULT_MODEL,
) -> tuple[Job, ...]:
    """The same jobs with ``time_limit`` set by ``model`` (pure; same seed -> same limits).

    Every job needs a ``runtime``. ``trace`` keeps each job's current ``time_limit`` (raised to its
    runtime where lower).
    """
    if any(j.runtime is None for j in jobs):
        raise ValueError("apply_estimates needs jobs with a known runtime")
    runtime = np.fromiter((float(j.runtime or 0.0) for j in jobs), dtype=np.float64, count=len(jobs))
    current = np.fromiter((j.time_limit for j in jobs), dtype=np.float64, count=len(jobs))
    limits, _ = estimate_limits(runtime, model, seed, cap, current, params)
    # runtime 0 would give a zero limit, which Job rejects: one second is the smallest request.
    limits = np.maximum(limits, 1.0)
    return tuple(
        dataclasses.replace(j, time_limit=float(t)) for j, t in zip(jobs, limits.tolist(), strict=True)
    )
