"""Parsers for Slurm's text formats, shared by the live backend (``slurm``) and the trace loaders
(``traces``).

Every parser raises ``ValueError`` with a short description; callers add file/line context.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

UNLIMITED = float("inf")
MAX_HOSTS = 1_000_000
"""Most names one host list may expand to: past any real cluster, and ``a[1-99999999999]`` must be an
error, not an attempt to build 10^11 strings."""

_DURATION = re.compile(r"^(?:(?P<d>\d+)-)?(?:(?P<a>\d+):)?(?:(?P<b>\d+):)?(?P<c>\d+(?:\.\d+)?)$")


def parse_duration(text: str) -> float:
    """Seconds from a Slurm time string: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
    ``D-HH:MM:SS`` (``squeue %l``, ``sacct Timelimit/Elapsed``). ``UNLIMITED``/``INFINITE`` -> inf."""
    s = text.strip()
    if s.upper() in {"UNLIMITED", "INFINITE"}:
        return UNLIMITED
    m = _DURATION.match(s)
    if not m:
        raise ValueError(f"not a Slurm duration: {text!r}")
    d, a, b, c = m.group("d"), m.group("a"), m.group("b"), m.group("c")
    if d is not None:
        # D-HH[:MM[:SS]]; the day count as a float, since an int of hundreds of digits cannot be added
        # to the float hours (OverflowError) and a huge count must end in the range check below
        parts = [p for p in (a, b, c) if p is not None]
        hh = float(parts[0])
        mm = float(parts[1]) if len(parts) > 1 else 0.0
        ss = float(parts[2]) if len(parts) > 2 else 0.0
        out = float(d) * 86400 + hh * 3600 + mm * 60 + ss
    elif a is None and b is None:
        out = float(c) * 60.0  # bare number = minutes
    elif b is None:
        out = float(a or 0) * 60 + float(c)  # MM:SS
    else:
        out = float(a or 0) * 3600 + float(b) * 60 + float(c)  # HH:MM:SS
    if not math.isfinite(out):
        # only the words UNLIMITED/INFINITE mean "no limit"; digits past a float are a corrupt value
        raise ValueError(f"Slurm duration out of range: {text[:40]!r}")
    return out


def short_duration(seconds: float, minute_decimals: int = 0) -> str:
    """Compact human duration for tables and reasons: ``45s``, ``20m``, ``2.0h``, ``1.5d``."""
    if seconds >= 86400:
        return f"{seconds / 86400:.1f}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds / 60:.{minute_decimals}f}m"
    return f"{seconds:.0f}s"


def format_duration(seconds: float) -> str:
    """Inverse of ``parse_duration`` (``D-HH:MM:SS``), for tables and sbatch ``--time``. Negative, NaN
    and -inf have no Slurm form: ``ValueError``."""
    if seconds == UNLIMITED:
        return "UNLIMITED"
    if not seconds >= 0 or not math.isfinite(seconds):
        raise ValueError(f"no Slurm duration for {seconds!r} seconds")
    total = round(seconds)
    d, rem = divmod(total, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def parse_timestamp(text: str) -> float | None:
    """Epoch seconds from ``YYYY-MM-DDTHH:MM:SS`` (local time, as Slurm prints); None for
    ``Unknown``/``None``/``N/A``/empty."""
    s = text.strip()
    if s in {"", "Unknown", "None", "N/A", "(null)"}:
        return None
    try:
        return datetime.fromisoformat(s).timestamp()
    except (ValueError, OverflowError, OSError) as exc:
        # OverflowError/OSError: a date the platform's local-time conversion cannot place (year 1, 9999)
        raise ValueError(f"not a Slurm timestamp: {text!r}") from exc


_MEM_UNITS = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024.0}


def parse_memory_mb(text: str) -> int:
    """MB from ``1000M``, ``8G``, ``62.50G``, ``512`` (MB). Negative, NaN and amounts past int64 (the
    dtype every caller stores them in) are a ``ValueError``: ``round`` raises OverflowError on inf, and
    no node or job has negative memory."""
    s = text.strip().upper()
    if not s:
        raise ValueError("empty memory value")
    unit = s[-1]
    value = float(s[:-1]) * _MEM_UNITS[unit] if unit in _MEM_UNITS else float(s)
    if not 0 <= value < 2.0**63:
        raise ValueError(f"memory must be >= 0 and below 2^63 MB, got {text[:40]!r}")
    return round(value)


def parse_tres(text: str) -> dict[str, str]:
    """``cpu=1,mem=1000M,gres/gpu:p100=4,gres/gpu=4`` -> mapping of TRES name to value string."""
    out: dict[str, str] = {}
    s = text.strip()
    if not s or s in {"N/A", "(null)"}:
        return out
    for item in s.split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"bad TRES item {item!r} in {text!r}")
        out[key.strip()] = value.strip()
    return out


def gpus_from_tres(tres: dict[str, str]) -> tuple[int, tuple[str, ...]]:
    """Total GPUs and the GPU types named in a TRES mapping (``gres/gpu``, ``gres/gpu:TYPE``)."""
    total = int(tres.get("gres/gpu", "0") or 0)
    types: list[str] = []
    typed_total = 0
    for key, value in tres.items():
        if key.startswith("gres/gpu:"):
            types.append(key.split(":", 1)[1])
            count = int(value)
            if count < 0:
                raise ValueError(f"negative GPU count {key}={value}")
            typed_total += count
    if total < 0:
        raise ValueError(f"negative GPU count gres/gpu={tres['gres/gpu']}")
    return max(total, typed_total), tuple(sorted(types))


_GRES = re.compile(r"^(?:gres[:/])?gpu(?::(?P<type>[A-Za-z0-9_.\-]+))?(?::(?P<count>\d+))?(?:\(.*\))?$")


def parse_gres_gpu(text: str) -> tuple[int, str]:
    """GPU count and type from one GRES spec: ``gres:gpu:p100:4``, ``gpu:k80:2(IDX:0-1)``, ``gpu:2``,
    ``gres:gpu:1``. ``N/A``/``(null)``/empty -> (0, ""). Non-GPU GRES are ignored (0, "")."""
    s = text.strip()
    if s in {"", "N/A", "(null)"}:
        return 0, ""
    total = 0
    gtype = ""
    for item in _split_top_level(s):
        m = _GRES.match(item.strip())
        if not m:
            continue
        t, c = m.group("type"), m.group("count")
        if t is not None and c is None and t.isdigit():
            t, c = None, t  # gpu:2
        total += int(c) if c is not None else 1
        gtype = gtype or (t or "")
    return total, gtype


def _split_top_level(s: str, opening: str = "(", closing: str = ")") -> list[str]:
    """Split on commas outside brackets (``gpu:a:2(IDX:0,2),gpu:b:1``, ``n[1-2,4],m1``)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


_HOST_RANGE = re.compile(r"^(?P<prefix>[^\[\]]*)\[(?P<body>[^\]]+)\](?P<suffix>.*)$")
# one range item: ASCII digits only, as Slurm prints them (int() would also read "٣" as 3 and rename
# node "n٣" to "n3")
_RANGE_ITEM = re.compile(r"(?P<lo>[0-9]+)(?:-(?P<hi>[0-9]+))?")
_NUMBERED = re.compile(r"(.*?)([0-9]+)")


def expand_hostlist(text: str) -> list[str]:
    """``p100-[1-2],k80-1`` -> ``['p100-1', 'p100-2', 'k80-1']`` (one bracket group per name, as Slurm
    prints node lists; zero padding kept). A bracket item that is not ``N`` or ``LO-HI`` (LO <= HI), or
    a list of more than ``MAX_HOSTS`` names, is a ``ValueError``."""
    s = text.strip()
    if not s or s in {"(null)", "N/A"}:
        return []
    out: list[str] = []
    for item in _split_brackets(s):
        m = _HOST_RANGE.fullmatch(item)
        if not m:
            out.append(item)
            continue
        prefix, body, suffix = m.group("prefix"), m.group("body"), m.group("suffix")
        for part in body.split(","):
            r = _RANGE_ITEM.fullmatch(part)
            if r is None:
                raise ValueError(f"bad host range {part!r} in {text[:80]!r}")
            lo, hi = r.group("lo"), r.group("hi")
            if hi is None:
                out.append(f"{prefix}{lo}{suffix}")
                continue
            first, last = int(lo), int(hi)
            if last < first or len(out) + last - first >= MAX_HOSTS:
                raise ValueError(f"bad host range {part!r} (empty, or over {MAX_HOSTS:,} names)")
            width = len(lo)
            out += [f"{prefix}{k:0{width}d}{suffix}" for k in range(first, last + 1)]
    return out


def _split_brackets(s: str) -> list[str]:
    return [x for x in _split_top_level(s, "[", "]") if x]


def compress_hostlist(names: list[str]) -> str:
    """Inverse of ``expand_hostlist`` for node names ``<prefix><number>``; others are listed as is."""
    groups: dict[str, list[tuple[int, str]]] = {}
    plain: list[str] = []
    for n in names:
        m = _NUMBERED.fullmatch(n)
        if m:
            groups.setdefault(m.group(1), []).append((int(m.group(2)), m.group(2)))
        else:
            plain.append(n)
    parts: list[str] = []
    for prefix, found in groups.items():
        nums = sorted(set(found))
        if len(nums) == 1:
            parts.append(f"{prefix}{nums[0][1]}")
            continue
        ranges: list[str] = []
        start = prev = nums[0]
        for cur in nums[1:]:
            if cur[0] == prev[0] + 1 and len(cur[1]) == len(prev[1]):
                prev = cur
                continue
            ranges.append(start[1] if start == prev else f"{start[1]}-{prev[1]}")
            start = prev = cur
        ranges.append(start[1] if start == prev else f"{start[1]}-{prev[1]}")
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts + plain)
