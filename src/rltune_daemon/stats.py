"""The paired comparison every verdict in this project uses: two policies on the same windows, the
per-window difference's mean judged against its standard error.

Two means over a handful of windows almost always differ; whether that says anything depends on how much
the per-window differences scatter. *lower* below ``-sigma`` SE, *higher* above ``+sigma`` SE, a *tie*
in between. ``rltune compare``, ``rltune evaluate``'s verdict and the daemon's check of a model's own
held-out record all judge with this one rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SIGMA_DEFAULT = 2.0


@dataclass(frozen=True)
class Paired:
    """Mean of ``a - b`` over paired windows, its standard error and the verdict (a against b)."""

    a: float  # a's mean
    b: float  # b's mean
    diff: float
    se: float
    verdict: str  # lower | higher | tie


def paired(a: Sequence[float], b: Sequence[float], sigma: float = SIGMA_DEFAULT,
           diffs: Sequence[float] | None = None) -> Paired:
    """Judge ``a`` against ``b`` (same windows, same order; at least 2). ``diffs`` replaces the plain
    per-window differences (``rltune compare --relative`` passes relative ones)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"a paired comparison needs two equally long series of at least 2 windows, got "
                         f"{len(a)} and {len(b)}")
    d = list(diffs) if diffs is not None else [x - y for x, y in zip(a, b, strict=True)]
    n = len(d)
    mean = sum(d) / n
    se = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1) / n)
    verdict = "lower" if mean < -sigma * se else "higher" if mean > sigma * se else "tie"
    return Paired(sum(a) / n, sum(b) / n, mean, se, verdict)


def overall(verdicts: Iterable[str]) -> str:
    """``better`` (no metric higher, one lower), ``worse`` (the reverse), ``tie`` or ``trade-off``."""
    v = set(verdicts)
    if "higher" in v and "lower" in v:
        return "trade-off"
    if "lower" in v:
        return "better"
    if "higher" in v:
        return "worse"
    return "tie"


def ranks(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks from 1, ties sharing their average rank (as Spearman's coefficient needs)."""
    order = np.argsort(x, kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1, dtype=np.float64)
    vals, inverse = np.unique(x, return_inverse=True)
    sums = np.bincount(inverse, weights=r)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse] if len(vals) < len(x) else r


def spearman(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> float:
    """Spearman rank correlation over the pairs where both are known (NaN with fewer than 2)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < 2:
        return math.nan
    ra, rb = ranks(a[ok]), ranks(b[ok])
    sa, sb = ra.std(), rb.std()
    if sa == 0 or sb == 0:
        return 1.0 if sa == sb else 0.0
    return float(((ra - ra.mean()) * (rb - rb.mean())).mean() / (sa * sb))


def rel_error(sim: float, real: float) -> float:
    return (sim - real) / real if real else (0.0 if sim == real else math.inf)

