"""Turn a plan order into SiteFactor values that make Slurm's priority order equal that order.

Slurm's priority is ``base + SiteFactor`` where ``base`` is the multifactor sum. We hand the planned jobs
the *same multiset* of base priorities they already have, in plan order (highest to the first job),
nudged down by 1 where values tie so the order is strict, and never below 1 (0 would be a hold). Jobs
outside the plan (exempt, held, new arrivals) therefore see the same priority landscape as before:
planning reorders the planned jobs among themselves and pushes nobody else back.
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.arrays import F64, I64

SITE_FACTOR_LIMIT = 2_147_483_645  # scontrol rejects larger magnitudes (FACTS §a)


def target_priorities(base: I64) -> I64:
    """Strictly decreasing targets for jobs already in plan order, from their own base values."""
    if not len(base):
        return np.zeros(0, dtype=np.int64)
    t = np.sort(base)[::-1].astype(np.int64)
    # enforce t[k] <= t[k-1] - 1: t[k] - (-k) is non-increasing after a running minimum
    k = np.arange(len(t), dtype=np.int64)
    t = np.minimum.accumulate(t + k) - k
    if t[-1] < 1:
        t += 1 - t[-1]
    return t


def site_factors(base: I64, target: I64) -> I64:
    return np.asarray(np.clip(target - base, -SITE_FACTOR_LIMIT, SITE_FACTOR_LIMIT), dtype=np.int64)


def realizes(priority: I64, submit: F64 | None = None) -> bool:
    """Whether priorities (in plan order) already give that order: strictly decreasing, or equal where
    the later job was submitted later (Slurm's tie-break), so writing nothing keeps the order."""
    d = np.diff(priority)
    if submit is None:
        return bool(np.all(d < 0))
    return bool(np.all((d < 0) | ((d == 0) & (np.diff(submit) > 0))))
