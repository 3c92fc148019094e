"""Turn a plan order into SiteFactor values that make Slurm's priority order equal that order.

Slurm's priority is ``base + SiteFactor`` where ``base`` is the multifactor sum. A tier nobody has
steered yet gets the base priorities its jobs already have, in plan order (highest to the first job),
pushed down where values lie closer than ``ROOM`` drift gaps so the order is strict and stays so, and
never below 1 (0 would be a hold). Where the bases are that far apart this is the same multiset, so jobs
outside the plan (exempt, held, new arrivals) see the landscape they saw before: planning reorders the
planned jobs among themselves; in a deep queue of near-equal bases the planned values spread below it.

Once values are written, a changed plan or drifting factors (age, fair share; Slurm recomputes a job's
priority the moment its SiteFactor is written, the others only every ``PriorityCalcPeriod``) invert a
few neighbours at a time. Handing out the landscape afresh would then rewrite the whole tier every
cycle; ``retarget`` instead keeps every job whose current priority can stay and moves only the rest,
each evenly into the room its kept neighbours leave, so a cycle writes about as many jobs as moved.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import pairwise

import numpy as np

from rltune_daemon.domain.arrays import F64, I64

SITE_FACTOR_LIMIT = 2_147_483_645  # scontrol rejects larger magnitudes (FACTS §a)
# Values written are ROOM gaps apart, so that a job the next plan moves between two of them still
# finds room there (a gap each side) instead of displacing its neighbours.
ROOM = 4


def target_priorities(base: I64, gap: int = 1) -> I64:
    """Strictly decreasing targets, at least ``gap`` apart, for jobs already in plan order, from their
    own base values."""
    if not len(base):
        return np.zeros(0, dtype=np.int64)
    t = np.sort(base)[::-1].astype(np.int64)
    # enforce t[k] <= t[k-1] - gap: t[k] + gap * k is non-increasing after a running minimum
    k = np.arange(len(t), dtype=np.int64) * gap
    t = np.minimum.accumulate(t + k) - k
    if t[-1] < 1:
        t += 1 - t[-1]
    return t


def retarget(current: I64, base: I64, gap: int = 1) -> I64:
    """Strictly decreasing targets (>= 1) for jobs in plan order that keep the most current values;
    a value written is at least ``gap`` from its neighbours (more than priorities drift between cycles).

    Job ``k`` keeps ``current[k]`` when it is in the longest chain of jobs whose current values already
    leave ``gap`` of room, in plan order, for every job between them and for every later job down to 1
    (with ``v = current + gap * position``: a non-increasing chain of ``v``, each ``v >= gap * n``).
    The others are spread evenly between their kept neighbours; above the first kept job and below the
    last one at the planned jobs' mean priority gap (at least ``ROOM`` gaps), within the span of their
    own priorities where it has room. Under a per-cycle write cap this converges however far the order
    moved: every value written joins the chain, so later cycles write only what is still out of place.
    A tier with no SiteFactor anywhere (``current == base``) gets ``target_priorities`` (``ROOM`` gaps
    apart): the first plan on it keeps its landscape."""
    n = len(current)
    full = target_priorities(base, ROOM * gap)
    cur = current.astype(np.int64)
    if not n or np.array_equal(cur, base):
        return full
    v = cur + gap * np.arange(n, dtype=np.int64)
    keep = _longest_non_increasing([int(k) for k in np.flatnonzero(v >= gap * n)], v)
    if not keep:
        return full
    t = cur.copy()
    first, last = keep[0], keep[-1]
    step = max(ROOM * gap, int(full[0] - full[-1]) // n)
    _spread(t, 0, first, int(cur[first]), max(int(full[0]) + gap, int(cur[first]) + (first + 1) * step))
    for a, b in pairwise(keep):
        _spread(t, a + 1, b, int(cur[b]), int(cur[a]))
    lo = max(0, min(int(full[-1]) - gap, int(cur[last]) - (n - last) * step))
    _spread(t, last + 1, n, lo, int(cur[last]))
    return t


def _longest_non_increasing(idx: list[int], v: I64) -> list[int]:
    """The longest subsequence of positions ``idx`` along which ``v`` does not increase."""
    tails: list[int] = []  # -v at the end of the best chain of each length (non-decreasing)
    ends: list[int] = []
    prev: dict[int, int] = {}
    for k in idx:
        key = -int(v[k])
        at = bisect_right(tails, key)
        if at:
            prev[k] = ends[at - 1]
        if at == len(tails):
            tails.append(key)
            ends.append(k)
        else:
            tails[at], ends[at] = key, k
    chain: list[int] = []
    k = ends[-1] if ends else -1
    while k >= 0:
        chain.append(k)
        k = prev.get(k, -1)
    return chain[::-1]


def _spread(t: I64, start: int, stop: int, lo: int, hi: int) -> None:
    """Evenly spaced strictly decreasing integers strictly between ``hi`` and ``lo`` for ``t[start:stop]``;
    where ``hi - lo >= g * (stop - start + 1)`` (``retarget`` chooses its bounds so) they are ``g`` apart."""
    m = stop - start
    if m > 0:
        i = np.arange(1, m + 1, dtype=np.int64)
        t[start:stop] = hi - (i * (hi - lo)) // (m + 1)


def site_factors(base: I64, target: I64) -> I64:
    return np.asarray(np.clip(target - base, -SITE_FACTOR_LIMIT, SITE_FACTOR_LIMIT), dtype=np.int64)


def realizes(priority: I64, submit: F64 | None = None) -> bool:
    """Whether priorities (in plan order) already give that order: strictly decreasing, or equal where
    the later job was submitted later (Slurm's tie-break), so writing nothing keeps the order."""
    d = np.diff(priority)
    if submit is None:
        return bool(np.all(d < 0))
    return bool(np.all((d < 0) | ((d == 0) & (np.diff(submit) > 0))))
