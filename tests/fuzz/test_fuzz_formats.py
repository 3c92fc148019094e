"""Hypothesis fuzzing of the Slurm text-format helpers (``formats/slurm.py``).

Their documented error is ``ValueError`` (callers add file/line context): any text gives a value of the
documented shape or a ``ValueError``, never another exception or a hang, and what the helpers print
(``format_duration``, ``compress_hostlist``) or what Slurm prints parses back to the same value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from fuzz_settings import fuzz
from hypothesis import example, given
from hypothesis import strategies as st

from rltune_daemon.formats.slurm import (
    compress_hostlist,
    expand_hostlist,
    format_duration,
    gpus_from_tres,
    parse_duration,
    parse_gres_gpu,
    parse_memory_mb,
    parse_timestamp,
    parse_tres,
)

# Characters that break naive splitting or number parsing; mixed into every garbage strategy.
HOSTILE = [
    *"|,;:=-+.[]()/\\ \t\n\r\x00\x0b\x0c\x1c\x85\u2028\ufeffeE_#%\"'",
    "é", "日本", "🙂", "٣", "\u00a0", "nan", "inf", "NaN", "-inf", "Infinity", "1e400", "9" * 25, "9" * 320,
    "-1", "0", "UNLIMITED", "INFINITE", "N/A", "(null)", "None", "Unknown", "gpu", "gres",
]  # fmt: skip
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
NUMERIC = st.text(alphabet=st.sampled_from(list("0123456789-:.+ eE")), max_size=24)
GARBAGE = st.one_of(
    TEXT,
    NUMERIC,
    st.lists(st.sampled_from(HOSTILE) | NUMERIC, max_size=8).map("".join),
)


def value_or_error(fn: Callable[[Any], Any], arg: Any) -> Any | None:
    """``fn(arg)``, or None when it raised the documented ``ValueError``; anything else propagates."""
    try:
        return fn(arg)
    except ValueError:
        return None


# ---------------------------------------------------------------- durations


def render_duration(seconds: int, style: str) -> str:
    """``seconds`` the ways Slurm prints a time (``sacct Timelimit``, ``squeue %l``, sbatch ``--time``)."""
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    if style == "d-hh:mm:ss":
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if style == "hh:mm:ss":
        return f"{d * 24 + h:02d}:{m:02d}:{s:02d}"
    if style == "mm:ss":
        return f"{seconds // 60}:{s:02d}"
    if style == "d-hh:mm":  # whole minutes only
        return f"{d}-{h:02d}:{m:02d}"
    if style == "d-hh":  # whole hours only
        return f"{d}-{h}"
    return str(seconds // 60)  # minutes


@fuzz
@given(GARBAGE)
@example("9" * 320 + "-00")  # days beyond a float
@example("1" * 400)  # minutes beyond a float
def test_parse_duration_garbage(text: str) -> None:
    got = value_or_error(parse_duration, text)
    if got is None:
        return
    assert isinstance(got, float) and not math.isnan(got) and got >= 0
    assert math.isfinite(got) or text.strip().upper() in {"UNLIMITED", "INFINITE"}


@fuzz
@given(
    st.integers(0, 400 * 86400),
    st.sampled_from(["d-hh:mm:ss", "hh:mm:ss", "mm:ss", "d-hh:mm", "d-hh", "minutes"]),
    st.sampled_from(["", " ", "\t"]),
)
def test_parse_duration_round_trip(seconds: int, style: str, pad: str) -> None:
    if style in {"d-hh:mm", "minutes", "mm:ss"}:
        seconds -= seconds % 60 if style != "mm:ss" else 0
    if style == "d-hh":
        seconds -= seconds % 3600
    assert parse_duration(pad + render_duration(seconds, style) + pad) == seconds
    assert parse_duration(format_duration(float(seconds))) == seconds


@fuzz
@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**20), 10**20).map(float))
def test_format_duration_any_float(seconds: float) -> None:
    text = value_or_error(format_duration, seconds)
    if text is None:
        assert not (seconds >= 0)  # only negative, NaN and -inf are refused
        return
    assert isinstance(text, str) and "\n" not in text
    if seconds == math.inf:
        assert parse_duration(text) == math.inf
    elif seconds < 2**53:
        assert parse_duration(text) == round(seconds)


# ---------------------------------------------------------------- timestamps


@fuzz
@given(GARBAGE)
@example("0001-01-01T00:00:00")
@example("9999-12-31T23:59:59")
@example("0001-01-01T00:00:00+23:59")
def test_parse_timestamp_garbage(text: str) -> None:
    try:
        got = parse_timestamp(text)
    except ValueError:
        return
    assert got is None or (isinstance(got, float) and math.isfinite(got))


@fuzz
@given(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(9998, 12, 31)),
    st.sampled_from(["naive", "utc", "offset"]),
    st.integers(-14 * 60, 14 * 60),
)
def test_parse_timestamp_round_trip(when: datetime, style: str, offset_min: int) -> None:
    when = when.replace(microsecond=0)
    if style == "naive":  # what sacct prints: local wall-clock time
        assert parse_timestamp(when.isoformat()) == when.timestamp()
        return
    tz = UTC if style == "utc" else timezone(timedelta(minutes=offset_min))
    aware = when.replace(tzinfo=tz)
    assert parse_timestamp(aware.isoformat()) == aware.timestamp()
    for empty in ("", "Unknown", "None", "N/A", "(null)", "  Unknown "):
        assert parse_timestamp(empty) is None


# ---------------------------------------------------------------- memory, TRES, GRES


@fuzz
@given(GARBAGE)
@example("1e400M")
@example("infK")
@example("-5G")
@example("1e30M")
def test_parse_memory_garbage(text: str) -> None:
    got = value_or_error(parse_memory_mb, text)
    assert got is None or (isinstance(got, int) and 0 <= got < 2**63)


@fuzz
@given(st.integers(0, 2**40), st.sampled_from(["M", "", "G", "K", "T", "m", "g"]), st.sampled_from(["", " "]))
def test_parse_memory_round_trip(mb: int, unit: str, pad: str) -> None:
    scale = {"": 1, "M": 1, "m": 1, "G": 1024, "g": 1024, "T": 1024 * 1024}.get(unit)
    if unit == "K":
        text = f"{mb * 1024}K"
    else:
        assert scale is not None
        mb -= mb % scale
        text = f"{mb // scale}{unit}"
    assert parse_memory_mb(pad + text + pad) == mb
    if mb % 512 == 0:
        assert parse_memory_mb(f"{mb / 1024:.2f}G") == mb  # 62.50G, as scontrol prints RealMemory


@fuzz
@given(GARBAGE)
def test_parse_tres_garbage(text: str) -> None:
    got = value_or_error(parse_tres, text)
    if got is not None:
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in got.items())
        assert all("," not in k + v for k, v in got.items())


TRES_NAME = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Z", "C"), blacklist_characters=",="),
    min_size=1,
    max_size=12,
)


@fuzz
@given(st.dictionaries(TRES_NAME, TRES_NAME | st.integers(0, 10**6).map(str), max_size=6))
def test_parse_tres_round_trip(tres: dict[str, str]) -> None:
    assert parse_tres(",".join(f"{k}={v}" for k, v in tres.items())) == tres


@fuzz
@given(
    st.dictionaries(
        st.sampled_from(["gres/gpu", "gres/gpu:a", "gres/gpu:b", "cpu"]) | TEXT, GARBAGE, max_size=5
    )
)
@example({"gres/gpu": "-3"})
@example({"gres/gpu:a": "-1"})
def test_gpus_from_tres_garbage(tres: dict[str, str]) -> None:
    got = value_or_error(gpus_from_tres, tres)
    if got is not None:
        total, types = got
        assert isinstance(total, int) and total >= 0 and types == tuple(sorted(types))


GPU_TYPE = st.from_regex(r"[A-Za-z][A-Za-z0-9_.\-]{0,10}", fullmatch=True)


@fuzz
@given(st.dictionaries(GPU_TYPE, st.integers(0, 64), max_size=4), st.integers(0, 64), st.booleans())
def test_gpus_from_tres_round_trip(typed: dict[str, int], untyped: int, with_total: bool) -> None:
    total = max(sum(typed.values()), untyped)
    items = [f"cpu={untyped + 1}", "mem=1000M"] + [f"gres/gpu:{t}={n}" for t, n in typed.items()]
    if with_total or not typed:
        items.append(f"gres/gpu={total}")
    else:
        total = sum(typed.values())
    assert gpus_from_tres(parse_tres(",".join(items))) == (total, tuple(sorted(typed)))


@fuzz
@given(GARBAGE)
@example("gpu:" + "9" * 30)
def test_parse_gres_garbage(text: str) -> None:
    got = value_or_error(parse_gres_gpu, text)
    if got is not None:
        count, gtype = got
        assert isinstance(count, int) and count >= 0 and isinstance(gtype, str)


@fuzz
@given(
    GPU_TYPE.filter(lambda t: not t.isdigit()),
    st.integers(0, 1024),
    st.sampled_from(["gres:gpu:{t}:{n}", "gpu:{t}:{n}", "gpu:{t}:{n}(IDX:0-1)", "gres/gpu:{t}:{n}"]),
    st.sampled_from(["", ",gres:shard:4", ",gpu:zz:1"]),
)
def test_parse_gres_round_trip(gtype: str, count: int, form: str, rest: str) -> None:
    extra = 1 if rest == ",gpu:zz:1" else 0
    assert parse_gres_gpu(form.format(t=gtype, n=count) + rest) == (count + extra, gtype)
    assert parse_gres_gpu(f"gpu:{count}") == (count, "")


# ---------------------------------------------------------------- host lists


@fuzz
@given(GARBAGE)
@example("a[1-99999999999]")  # must refuse, not build 10^11 names
@example("a[3-1]")
@example("a[1,,2]")
@example("a[٣-٤]")
def test_expand_hostlist_garbage(text: str) -> None:
    got = value_or_error(expand_hostlist, text)
    if got is not None:
        assert isinstance(got, list) and all(isinstance(n, str) and n for n in got)


NODE_NAME = st.from_regex(r"[a-z][a-z0-9_\-]{0,6}[0-9]{0,4}", fullmatch=True)


@fuzz
@given(
    st.lists(NODE_NAME, max_size=30) | st.lists(st.integers(0, 120).map(lambda i: f"n{i:02d}"), max_size=40)
)
def test_hostlist_round_trip(names: list[str]) -> None:
    text = compress_hostlist(names)
    assert set(expand_hostlist(text)) == set(names)


@fuzz
@given(
    st.from_regex(r"[a-z][a-z\-]{0,5}", fullmatch=True),
    st.lists(st.tuples(st.integers(0, 500), st.integers(0, 20)), min_size=1, max_size=5),
    st.integers(1, 4),
    st.sampled_from(["", "-ib"]),
)
def test_expand_hostlist_ranges(prefix: str, ranges: list[tuple[int, int]], width: int, suffix: str) -> None:
    parts, want = [], []
    for lo, span in ranges:
        hi = lo + span
        parts.append(f"{lo:0{width}d}-{hi:0{width}d}" if span else f"{lo:0{width}d}")
        want += [f"{prefix}{k:0{width}d}{suffix}" for k in range(lo, hi + 1)]
    assert expand_hostlist(f"{prefix}[{','.join(parts)}]{suffix},other-1") == [*want, "other-1"]


@fuzz
@given(st.lists(TEXT | st.sampled_from(HOSTILE), max_size=10))
def test_compress_hostlist_any_names(names: list[str]) -> None:
    got = value_or_error(compress_hostlist, names)
    assert got is None or isinstance(got, str)


@fuzz
@given(st.lists(st.from_regex(r"[a-z]{1,2}[٠-٩0-9]{1,2}", fullmatch=True), max_size=12))
@example(["a٣", "a٤"])  # was compressed to a[٣-٤] and expanded to a3, a4
def test_hostlist_round_trip_non_ascii_digits(names: list[str]) -> None:
    """Only ASCII digits are node numbers: ``n٣`` is a name, not node 3."""
    assert set(expand_hostlist(compress_hostlist(names))) == set(names)
