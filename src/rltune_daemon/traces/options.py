"""Per-trace options (``load_workload(..., **opts)``, CLI ``--opt key=value``).

Values may come typed (Python callers) or as strings (CLI), so every getter accepts both, including
fractions such as ``slice=1/20``. Unknown keys are an error naming the valid ones: a typo must not
silently fall back to a default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rltune_daemon.errors import UserError
from rltune_daemon.formats.slurm import parse_duration

MAX_JOBS = 10_000_000
"""Largest ``jobs=`` a generator accepts: 100x the biggest real trace here; each job costs arrays."""
MAX_USERS = 1_000_000
"""Largest ``users=``: the Zipf popularity table holds one float per user (users=10^9 would be 8 GB)."""


class Options:
    def __init__(self, trace: str, opts: Mapping[str, Any]) -> None:
        self.trace = trace
        self._opts = dict(opts)
        self._used: set[str] = set()

    def _get(self, key: str) -> Any:
        self._used.add(key)
        return self._opts.get(key)

    def _bad(self, key: str, value: Any, want: str) -> UserError:
        return UserError(f"{self.trace}: option {key}={value!r} is not {want}")

    def number(self, key: str, default: float, *, lo: float | None = None, hi: float | None = None) -> float:
        value = self._get(key)
        if value is None:
            return default
        try:
            out = float(Fraction(value)) if isinstance(value, str) else float(value)
        except (ValueError, ZeroDivisionError, TypeError, OverflowError):  # OverflowError: "1" * 400
            raise self._bad(key, value, "a number") from None
        if not math.isfinite(out):  # NaN passes every range check below; no option means infinity
            raise self._bad(key, value, "a finite number")
        if (lo is not None and out < lo) or (hi is not None and out > hi):
            raise self._bad(key, value, f"in [{lo}, {hi}]")
        return out

    def integer(self, key: str, default: int, *, lo: int = 0, hi: int | None = None) -> int:
        value = self._get(key)
        if value is None:
            return default
        try:
            out = int(value)
        except (ValueError, TypeError, OverflowError):  # OverflowError: int(float("inf"))
            raise self._bad(key, value, "an integer") from None
        if out < lo:
            raise self._bad(key, value, f"an integer >= {lo}")
        if hi is not None and out > hi:
            raise self._bad(key, value, f"an integer <= {hi:,}")
        return out

    def seconds(self, key: str, default: float) -> float:
        """Seconds, or a Slurm duration string (``7-00:00:00``)."""
        value = self._get(key)
        if value is None:
            return default
        try:
            out = float(value)
        except (ValueError, TypeError):
            try:
                out = parse_duration(str(value))
            except ValueError:
                raise self._bad(key, value, "seconds or a Slurm duration") from None
        if not 0 < out < float("inf"):
            raise self._bad(key, value, "a positive finite duration")
        return out

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self._get(key)
        return default if value is None else str(value)

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.text(key, default) or default
        if value not in allowed:
            raise self._bad(key, value, f"one of {', '.join(allowed)}")
        return value

    def finish(self) -> None:
        """Raise if an option was given that this trace does not read."""
        unknown = sorted(set(self._opts) - self._used)
        if unknown:
            valid = ", ".join(sorted(self._used)) or "none"
            raise UserError(f"{self.trace}: unknown option(s) {', '.join(unknown)} (valid: {valid})")
