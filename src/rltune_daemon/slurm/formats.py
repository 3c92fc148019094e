"""Parsers for Slurm's text formats, shared by the live backend and the ``sacct`` trace loader.

Every parser raises ``ValueError`` with a short description; callers add file/line context.
"""

from __future__ import annotations

import re
from datetime import datetime

UNLIMITED = float("inf")

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
    days = int(d) if d else 0
    if d is not None:
        # D-HH[:MM[:SS]]
        parts = [p for p in (a, b, c) if p is not None]
        hh = float(parts[0])
        mm = float(parts[1]) if len(parts) > 1 else 0.0
        ss = float(parts[2]) if len(parts) > 2 else 0.0
        return days * 86400 + hh * 3600 + mm * 60 + ss
    if a is None and b is None:
        return float(c) * 60.0  # bare number = minutes
    if b is None:
        return float(a or 0) * 60 + float(c)  # MM:SS
    return float(a or 0) * 3600 + float(b) * 60 + float(c)  # HH:MM:SS


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
    """Inverse of ``parse_duration`` (``D-HH:MM:SS``), for tables and sbatch ``--time``."""
    if seconds == UNLIMITED:
        return "UNLIMITED"
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
    except ValueError as exc:
        raise ValueError(f"not a Slurm timestamp: {text!r}") from exc


_MEM_UNITS = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024.0}


def parse_memory_mb(text: str) -> int:
    """MB from ``1000M``, ``8G``, ``62.50G``, ``512`` (MB)."""
    s = text.strip().upper()
    if not s:
        raise ValueError("empty memory value")
    unit = s[-1]
    if unit in _MEM_UNITS:
        return round(float(s[:-1]) * _MEM_UNITS[unit])
    return round(float(s))


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
            typed_total += int(value)
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


def expand_hostlist(text: str) -> list[str]:
    """``p100-[1-2],k80-1`` -> ``['p100-1', 'p100-2', 'k80-1']`` (one bracket group per name, as Slurm
    prints node lists; zero padding kept)."""
    s = text.strip()
    if not s or s in {"(null)", "N/A"}:
        return []
    out: list[str] = []
    for item in _split_brackets(s):
        m = _HOST_RANGE.match(item)
        if not m:
            out.append(item)
            continue
        prefix, body, suffix = m.group("prefix"), m.group("body"), m.group("suffix")
        for part in body.split(","):
            lo, _, hi = part.partition("-")
            if not hi:
                out.append(f"{prefix}{lo}{suffix}")
                continue
            width = len(lo)
            for k in range(int(lo), int(hi) + 1):
                out.append(f"{prefix}{k:0{width}d}{suffix}")
    return out


def _split_brackets(s: str) -> list[str]:
    return [x for x in _split_top_level(s, "[", "]") if x]


def compress_hostlist(names: list[str]) -> str:
    """Inverse of ``expand_hostlist`` for node names ``<prefix><number>``; others are listed as is."""
    groups: dict[str, list[tuple[int, str]]] = {}
    plain: list[str] = []
    for n in names:
        m = re.match(r"^(.*?)(\d+)$", n)
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
