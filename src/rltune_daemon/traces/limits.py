"""Bounds on the numbers a trace or cluster file may give.

A corrupt or hostile value must be an ``InputFileError`` on its own line, not an int64 overflow deep in
numpy, nor a cluster of 10^12 nodes built one ``NodeSpec`` at a time. The bounds are far past any real
cluster or request, so no genuine log meets them.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_COUNT = 2**31 - 1
"""GPUs, CPUs, MB of memory (2 PiB) of one job or node. The product of two such counts (a chunk of
GPUs times a node's CPUs or MB in ``placement.shapes``) still fits in int64."""

MAX_NODES = 1_000_000
"""Nodes of one cluster, and so of one job: past the largest machines (Fugaku has 158,976); a cluster of
that many takes seconds to build, one a million times larger would never finish."""

MAX_SECONDS = 1e15
"""Times and durations, in seconds (30 million years; epoch milliseconds still pass): float64 holds them
to 1/8 s, and the sums and products the loaders and the user-estimate model form (submit - origin,
runtime x a factor up to ~10^2) stay finite. 1e308 would overflow them to inf."""

MAX_GPU_TYPES = 63
"""Distinct GPU types of one cluster: a job's acceptable types are one bit each of an int64 mask
(``domain.arrays.type_mask``)."""


def bounded(value: int, what: str, hi: int = MAX_COUNT) -> int:
    """``value`` when ``0 <= value <= hi``; else a ``ValueError`` naming ``what``."""
    if not 0 <= value <= hi:
        text = str(value) if abs(value) < 10**18 else f"{str(value)[:12]}... ({len(str(abs(value)))} digits)"
        raise ValueError(f"{what} must be between 0 and {hi:,}, got {text}")
    return value


def parse_count(text: str, what: str, hi: int = MAX_COUNT) -> int:
    """A whole number in ``[0, hi]`` parsed from ``text``; else a ``ValueError`` naming ``what``."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{what} is not a whole number: {text[:40]!r}") from None
    return bounded(value, what, hi)


def seconds(value: float, what: str) -> float:
    """``value`` when finite and within ``MAX_SECONDS`` of zero; else a ``ValueError`` naming ``what``."""
    if not abs(value) <= MAX_SECONDS:
        raise ValueError(f"{what} must be a number of seconds within ±{MAX_SECONDS:.0e}, not {value!r}")
    return value


def too_many_gpu_types(types: Iterable[str]) -> str:
    """The problem, or "" when a cluster with these node GPU types fits a type mask."""
    distinct = set(types)
    if len(distinct) <= MAX_GPU_TYPES:
        return ""
    return f"{len(distinct)} distinct GPU types, more than the {MAX_GPU_TYPES} one cluster can hold"


def shown(text: str) -> str:
    """``text`` for an error message: as is when printable, else its repr, so that a tab, NUL or line
    separator (U+2028, form feed...) in an id from the file cannot break the one-line message."""
    return text if text.isprintable() else repr(text)
