"""Seeded sampling helpers shared by the generators (helios, alibaba, testbed) and the estimate model.

Every random stream is derived from ``(seed, purpose)`` so that, e.g., changing how durations are drawn
does not shift the arrival times, and the estimate model never reuses a generator's numbers.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from rltune_daemon.domain.arrays import F64, I64


def rng_for(seed: int, purpose: str) -> np.random.Generator:
    """Independent generator for one purpose; deterministic in ``(seed, purpose)``."""
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return np.random.default_rng([zlib.crc32(purpose.encode()), seed])


def normal_cdf(z: F64) -> F64:
    """Standard normal CDF (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7); numpy has no erf."""
    x = np.abs(z) / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-x * x)
    out: F64 = 0.5 * (1.0 + np.sign(z) * erf)
    return out


def correlated_uniforms(rng: np.random.Generator, n: int, rho: float) -> tuple[F64, F64]:
    """Two U(0,1) vectors joined by a Gaussian copula with correlation ``rho``.

    Used to make bigger jobs run longer without changing either marginal distribution.
    """
    z1 = rng.standard_normal(n)
    z2 = rho * z1 + np.sqrt(1.0 - rho * rho) * rng.standard_normal(n)
    return normal_cdf(z1), normal_cdf(z2)


def discrete_from_cdf(u: F64, values: Sequence[int], cdf: Sequence[float]) -> I64:
    """Inverse CDF of a discrete distribution: ``values[i]`` where ``cdf[i-1] < u <= cdf[i]``."""
    c = np.asarray(cdf, dtype=np.float64)
    c = c / c[-1]
    idx = np.minimum(np.searchsorted(c, u, side="left"), len(values) - 1)
    return np.asarray(values, dtype=np.int64)[idx]


def loglinear_inverse_cdf(u: F64, seconds: Sequence[float], cdf: Sequence[float], floor: float = 1.0) -> F64:
    """Inverse of a CDF given at points ``seconds`` (increasing), interpolating linearly in log(time).

    Below the first point the value is ``floor`` (published duration CDFs start at 1 s); the last
    point must have CDF 1. Flat stretches of the CDF are skipped.
    """
    t = np.asarray(seconds, dtype=np.float64)
    c = np.asarray(cdf, dtype=np.float64)
    c = c / c[-1]
    keep = np.concatenate(([True], np.diff(c) > 0))
    c, logt = c[keep], np.log(t[keep])
    out = np.exp(np.interp(u, c, logt))
    return np.where(u <= c[0], floor, out)


def poisson_arrivals(rng: np.random.Generator, n: int, rate: float) -> F64:
    """``n`` arrival times (s) of a homogeneous Poisson process with ``rate`` jobs/s, first gap included."""
    return np.cumsum(rng.exponential(1.0 / rate, n))


def diurnal_arrivals(rng: np.random.Generator, n: int, rate: float, hourly: Sequence[float]) -> F64:
    """``n`` arrival times (s from midnight) of a non-homogeneous Poisson process.

    The intensity is ``rate * hourly[h] / mean(hourly)`` in hour ``h`` of each day (piecewise constant),
    so the mean rate is ``rate``. Sampled by mapping a unit-rate process through the inverse of the
    cumulative intensity, which is exact and vectorised.
    """
    w = np.asarray(hourly, dtype=np.float64)
    if len(w) != 24 or np.any(w <= 0):
        raise ValueError("hourly profile needs 24 positive values")
    w = w / w.mean()
    cum = np.concatenate(([0.0], np.cumsum(w) * 3600.0))  # operational seconds at each hour start
    tau = np.cumsum(rng.exponential(1.0 / rate, n))  # operational time (mean intensity 1)
    day, rem = np.divmod(tau, 86400.0)
    hour = np.minimum(np.searchsorted(cum, rem, side="right") - 1, 23)
    within = (rem - cum[hour]) / w[hour]
    out: F64 = day * 86400.0 + hour * 3600.0 + within
    return out


def zipf_choice(rng: np.random.Generator, n: int, k: int, exponent: float = 1.0) -> I64:
    """``n`` draws from ``0..k-1`` with P(i) proportional to 1/(i+1)^exponent (user popularity)."""
    p = 1.0 / np.arange(1, k + 1, dtype=np.float64) ** exponent
    return rng.choice(k, size=n, p=p / p.sum()).astype(np.int64)
