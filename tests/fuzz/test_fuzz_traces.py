"""Hypothesis fuzzing of every trace loader: SWF, ``sacct -P``, plain CSV (``load_workload(path)``),
cluster files (CSV and ``scontrol -o``), Philly, the openb pod and node lists, the PAI machine list and
the Helios generator's options.

Two kinds of property per loader:

* *garbage*: arbitrary bytes/text and mutated valid files (truncated, lines duplicated/deleted/swapped,
  hostile tokens inserted, one field replaced by ``|``, ``,``, NUL, unicode, huge/negative numbers,
  NaN/inf, empty) give a valid result or the documented ``InputFileError``, whose message is one line
  that starts with the file's path and names a line of the file. Nothing else: no IndexError,
  KeyError, OverflowError, numpy error, hang;
* *round trip*: valid records with hostile text in every user-controlled field, rendered by a small
  renderer here, load back with every field in the right record (or dropped by the documented rule,
  and counted).

Files are written inside the test body (hypothesis re-runs it; a function-scoped ``tmp_path`` would be
shared by all examples), into one module-scoped scratch directory.
"""

from __future__ import annotations

import bz2
import csv
import functools
import gzip
import io
import lzma
import math
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from fuzz_settings import fuzz
from hypothesis import event, example, given
from hypothesis import strategies as st

from rltune_daemon.domain.arrays import ClusterArrays
from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError, UserError
from rltune_daemon.traces import alibaba, clusterfile, feasibility, helios, load_workload, openb, philly
from rltune_daemon.traces.resources import file_text

T = TypeVar("T")
ASSEMBLE_DROPS = ("runtime_not_positive", "no_resources", "unknown_gpu_type", "infeasible")
NEWLINE = re.compile(r"\r\n|\r|\n")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def put(scratch: Path, name: str, data: str | bytes) -> Path:
    path = scratch / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# ---------------------------------------------------------------- what a loader may do


def attempt(fn: Callable[[], T], path: Path) -> T | None:
    """``fn()``, or None when it raised ``InputFileError`` (checked); any other exception fails."""
    try:
        out = fn()
    except InputFileError as err:
        check_error(err, path)
        event("InputFileError")  # --hypothesis-show-statistics: how often each outcome was reached
        return None
    event("loaded")
    return out


def check_error(err: InputFileError, path: Path) -> None:
    msg = str(err)
    assert msg.startswith(str(path)) and err.path == str(path), msg
    assert len(msg.splitlines()) == 1, f"not one line: {msg!r}"
    assert err.problem.strip(), msg
    if err.line is not None:
        text = file_text(path)  # decompressed as the loader read it
        assert 1 <= err.line <= len(NEWLINE.split(text)), (msg, err.line)


def check_cluster(spec: ClusterSpec) -> None:
    assert spec.nodes, "a cluster without nodes"
    assert all(n.gpus >= 0 and n.cpus >= 0 and n.mem_mb >= 0 for n in spec.nodes)
    assert len(spec.gpu_types) <= 63  # one bit per type in an int64 mask
    ClusterArrays.from_spec(spec)  # what the simulator builds first: must not overflow


def check_workload(w: Workload) -> None:
    """The ``load_workload`` contract (traces/__init__.py): sorted, rebased, unique ids, limits no
    shorter than runtimes, every job runnable on the cluster, every drop counted."""
    jobs = w.jobs
    ids = [j.id for j in jobs]
    assert len(set(ids)) == len(ids) and all(ids)
    submit = np.array([j.submit for j in jobs], dtype=np.float64)
    assert np.all(np.isfinite(submit)) and np.all(np.diff(submit) >= 0)
    assert not jobs or submit[0] == 0
    for j in jobs:
        assert j.runtime is not None and 0 < j.runtime < math.inf, j
        assert j.runtime <= j.time_limit < math.inf, j
        assert min(j.gpus, j.nodes, j.cpus, j.mem_mb) >= 0, j
        assert j.partition == "" or j.partition in w.cluster.partition_names
    check_cluster(w.cluster)
    verdict = feasibility.check(
        w.cluster,
        np.array([j.gpus for j in jobs], dtype=np.int64),
        np.array([j.nodes for j in jobs], dtype=np.int64),
        np.array([j.cpus for j in jobs], dtype=np.int64),
        np.array([j.mem_mb for j in jobs], dtype=np.int64),
        [j.gpu_types for j in jobs],
        [j.partition for j in jobs],
    )
    assert verdict.ok.all()
    dropped = w.meta["dropped"]
    assert all(v > 0 for v in dropped.values())
    assert w.meta["rows"] == len(jobs) + sum(dropped.get(k, 0) for k in ASSEMBLE_DROPS)


def load_file(path: Path, **kw: Any) -> Workload | None:
    w = attempt(lambda: load_workload(str(path), **kw), path)
    if w is not None:
        check_workload(w)
    return w


# ---------------------------------------------------------------- hostile text and mutations

ODD = [
    *"|,;:=#.-_/\\[](){}\"' \t%$@!?*&^~`<>+",
    "\x00", "\x07", "\x0b", "\x0c", "\x1c", "\x1e", "\x85", "\u2028", "\u2029", "\ufeff", "\u00a0",
    "\u200b", "é", "ß", "Ω", "İ", "日", "本", "🙂", "٣", "\U0001d7d8",
]  # fmt: skip
TOKENS = [
    "", "|", "||", ",", ",,", "\t", "\n", "\r\n", "\r", "\x00", '"', "'", ";", "#", "=", ":", " ", "-",
    "-1", "-0", "0", "00", "0.5", "-7", "1e400", "-1e400", "1e308", "nan", "NaN", "inf", "-inf",
    "Infinity", "9" * 25, "9" * 400, "9223372036854775808", "2147483648", "1000000", "1_000", "٣", "é",
    "🙂", "\u2028", "\ufeff", "None", "Unknown", "N/A", "(null)", "UNLIMITED", "Partition_Limit",
    "NaT", "today", "2017-10-09 07:01:55", "2024-01-01T00:00:00", "NodeName=", "PartitionName=x",
    "CPUTot=", "Gres=gpu:", "gres/gpu=", "gres/gpu:a=", "mem=", "node=", "cpu=", "[", "]", "prefix",
]  # fmt: skip
ANY_CHAR = st.characters(blacklist_categories=("Cs",))
TOKEN = st.sampled_from(TOKENS) | st.text(ANY_CHAR, max_size=6)


# Alphabet of user-controlled text: the hostile characters above, plain ASCII, and other scripts,
# combining and zero-width marks, right-to-left letters and astral code points. One string alphabet
# keeps hypothesis on its fast path (a one_of of alphabets costs three times as much per character).
WIDE = (
    "".join(ODD)
    + "abcXYZ019_-."
    + "àÿĀžΑωЖя"
    + "אבת"
    + "اب"
    + "\u0301\u200d\u2060"
    + "𝟘\U0010fffd"
    + "\uffff"
)


def _pool() -> list[str]:
    """Names for the round trips: every WIDE character alone, then 3,000 seeded mixes of 2-10 of them,
    shortest first (hypothesis shrinks a sampled value toward the front). Sampling one costs a single
    draw, a third of a character-by-character text; arbitrary text stays in the garbage properties."""
    rng = random.Random(20240601)
    mixes = {"".join(rng.choice(WIDE) for _ in range(rng.randint(2, 10))) for _ in range(3000)}
    return sorted(set(WIDE) | mixes, key=lambda t: (len(t), t))


POOL = _pool()


@functools.cache  # composites call it per draw: filter the pool once per signature
def text_field(exclude: str = "", min_size: int = 1, max_size: int = 10) -> st.SearchStrategy[str]:
    """User-controlled text (names, accounts, types) with hostile characters, minus ``exclude`` (what
    the format cannot carry), without the surrounding whitespace loaders strip; "" too if min_size is 0."""
    names = list(dict.fromkeys(t.strip() for t in POOL if not set(t) & set(exclude)))
    names = [t for t in names if min_size <= len(t) <= max_size]
    return st.sampled_from(names)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str], seps: str) -> str:
    """``base`` with 1-4 mutations: truncation, a cut, a line duplicated/deleted/swapped, a token
    inserted, or one ``seps``-separated field of one line replaced by a token."""
    text = draw(base)
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3, 4]))):  # mostly one: keep some files loadable
        lines = text.split("\n")
        op = draw(st.sampled_from(["truncate", "cut", "dup", "delete", "swap", "insert", "field", "field"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif op == "cut":
            a = draw(st.integers(0, len(text)))
            text = text[:a] + text[draw(st.integers(a, min(len(text), a + 30))) :]
        elif op == "insert":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(TOKEN) + text[at:]
        else:
            if op == "dup":
                lines.insert(i, lines[i])
            elif op == "delete":
                del lines[i]
            elif op == "swap":
                j = draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            else:
                sep = draw(st.sampled_from(seps))
                cells = lines[i].split(sep)
                cells[draw(st.integers(0, len(cells) - 1))] = draw(TOKEN)
                lines[i] = sep.join(cells)
            text = "\n".join(lines)
    return text


def garbage(valid: st.SearchStrategy[str], seps: str, header: str = "") -> st.SearchStrategy[str | bytes]:
    """Arbitrary text, arbitrary text under a valid header, raw bytes, or a mutated valid file."""
    return st.one_of(
        st.text(ANY_CHAR, max_size=200),
        st.lists(TOKEN, max_size=30).map(lambda ts: header + "".join(ts)),
        st.binary(max_size=200),
        mutated(valid, seps),
        mutated(valid, seps),  # twice the weight: these reach past the first line
    )


def shuffled(draw: st.DrawFn, items: list[T]) -> list[T]:
    """``items`` in an order drawn with one choice (``st.permutations`` draws once per element, and an
    order needs no shrinking)."""
    out = list(items)
    random.Random(draw(st.integers(0, 2**32 - 1))).shuffle(out)
    return out


def subset(draw: st.DrawFn, items: list[T]) -> list[T]:
    """Some of ``items``, in their order, drawn with one choice (a bit mask)."""
    mask = draw(st.integers(0, 2 ** len(items) - 1))
    return [x for i, x in enumerate(items) if mask >> i & 1]


def start_lines(chunks: list[str]) -> tuple[str, list[int]]:
    """Concatenate ``chunks``; the 1-based line each one starts on (CR, LF and CRLF end a line)."""
    text, starts = "", []
    for c in chunks:
        starts.append(len(NEWLINE.findall(text)) + 1)
        text += c
    return text, starts


def unique_ids_ref(ids: list[str]) -> list[str]:
    """The documented renaming of repeated ids: ``#2``, ``#3``... skipping any name the log uses."""
    taken, used, out = set(ids), set(), []
    for jid in ids:
        new, k = jid, 1
        while new in used or (new != jid and new in taken):
            k += 1
            new = f"{jid}#{k}"
        used.add(new)
        out.append(new)
    return out


def csv_row(cells: list[Any], eol: str = "\n", quoting: int = csv.QUOTE_MINIMAL) -> str:
    """One CSV record as a careful writer makes it: written with a CRLF terminator, so that a field
    holding a bare CR or LF is quoted (with ``lineterminator="\n"`` csv.writer leaves a CR unquoted,
    which every reader takes for a line end), then ended with ``eol``."""
    buf = io.StringIO()
    csv.writer(buf, quoting=quoting, lineterminator="\r\n").writerow(cells)
    return buf.getvalue().removesuffix("\r\n") + eol


def utc_text(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).replace(tzinfo=None).isoformat()


def slurm_duration(seconds: int, style: int) -> str:
    """A whole-minute duration as sacct prints Timelimit (``D-HH:MM:SS``, ``HH:MM:SS``) or minutes."""
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    if style == 0:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if style == 1:
        return f"{d * 24 + h:02d}:{m:02d}:{s:02d}"
    return str(seconds // 60)


@dataclass
class Expect:
    """What a round trip must give back: per kept job (in submit order) its fields, and the drops."""

    jobs: list[dict[str, Any]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    estimates: str = "user"


def check_round_trip(w: Workload, want: Expect, fields: tuple[str, ...]) -> None:
    check_workload(w)
    got = [{f: getattr(j, f) for f in fields} for j in w.jobs]
    assert got == [{f: e[f] for f in fields} for e in want.jobs]
    assert w.meta["dropped"] == {k: v for k, v in want.dropped.items() if v}
    assert w.estimates == want.estimates
    for j, e in zip(w.jobs, want.jobs, strict=True):
        limit = e.get("limit", math.nan)
        if want.estimates == "trace" and limit > 0:
            assert j.time_limit == max(limit, e["runtime"])  # the file's own request, raised to the runtime
        else:
            assert j.time_limit >= e["runtime"]  # filled by the user model


def in_submit_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kept rows sorted stably by submit time, submit rebased to the first."""
    out = sorted(rows, key=lambda r: r["abs_submit"])  # stable: file order among equal times
    origin = out[0]["abs_submit"] if out else 0.0
    return [{**r, "submit": r["abs_submit"] - origin} for r in out]


# ================================================================ SWF


@dataclass
class SwfJob:
    id: str
    submit: int
    wait: int
    run: int
    alloc: int
    req: int
    reqtime: int
    user: int
    queue: int
    part: int


@st.composite
def swf_specs(draw: st.DrawFn) -> tuple[str, list[SwfJob], int | None, list[int]]:
    """(file text, jobs, capacity in processors (None: sized to the largest job), line of each job)."""
    kind = draw(st.sampled_from(["none", "both", "nodes", "procs"]))
    nodes, ppn = draw(st.integers(1, 16)), draw(st.integers(1, 8))
    head = ["; Version: 2.2", "; Computer: fuzz \u2028 é"]
    if kind in ("both", "nodes"):
        head.append(f"; MaxNodes: {nodes}")
    if kind in ("both", "procs"):
        head.append(f"; MaxProcs: {nodes * ppn}")
    if draw(st.booleans()):
        head.append(f"; MaxRuntime: {draw(st.integers(1, 10**7))}")
    capacity = {"none": None, "both": nodes * ppn, "nodes": nodes, "procs": nodes * ppn}[kind]
    jobs = [
        SwfJob(
            id=f"{draw(st.integers(1, 30)):0{draw(st.integers(1, 3))}d}",
            submit=draw(st.integers(0, 10**8)),
            wait=draw(st.integers(-1, 10**4)),
            run=draw(st.integers(-1, 10**6)),
            alloc=draw(st.integers(-1, 40)),
            req=draw(st.just(-1) | st.integers(1, 40)),
            reqtime=draw(st.sampled_from([-1, 0]) | st.integers(1, 10**6)),
            user=draw(st.integers(-1, 300)),
            queue=draw(st.integers(-1, 5)),
            part=draw(st.integers(-1, 5)),
        )
        for _ in range(draw(st.integers(0, 8)))
    ]
    sep = draw(st.sampled_from([" ", "  ", "\t", " \t "]))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    chunks = [h + eol for h in head]
    for j in jobs:
        chunks.append(draw(st.sampled_from(["", eol, "; comment \x0c é" + eol, "  " + eol])))
        cells = [
            j.id,
            j.submit,
            j.wait,
            j.run,
            j.alloc,
            -1,
            -1,
            j.req,
            j.reqtime,
            -1,
            1,
            j.user,
            1,
            -1,
            j.queue,
            j.part,
            -1,
            -1,
        ]
        chunks.append(draw(st.sampled_from(["", "   "])) + sep.join(map(str, cells)) + eol)
    text, starts = start_lines(chunks)
    return text, jobs, capacity, starts[len(head) + 1 :: 2]


def swf_expect(jobs: list[SwfJob], capacity: int | None) -> Expect:
    want = Expect(estimates="trace" if any(j.reqtime > 0 for j in jobs) else "user")
    kept = []
    for j, jid in zip(jobs, unique_ids_ref([j.id for j in jobs]), strict=True):
        procs = max(j.req if j.req > 0 else j.alloc, 0)
        if j.run <= 0:
            want.dropped["runtime_not_positive"] += 1
        elif procs == 0:
            want.dropped["no_resources"] += 1
        elif capacity is not None and procs > capacity:
            want.dropped["infeasible"] += 1
        else:
            kept.append(
                {
                    "id": jid,
                    "abs_submit": float(j.submit),
                    "runtime": float(j.run),
                    "gpus": procs,
                    "user": f"u{j.user}" if j.user >= 0 else "",
                    "account": f"q{j.queue}" if j.queue >= 0 else (f"p{j.part}" if j.part >= 0 else ""),
                    "limit": float(j.reqtime) if j.reqtime > 0 else math.nan,
                }
            )
    want.jobs = in_submit_order(kept)
    return want


SWF_LINE = "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n"


@fuzz
@given(garbage(swf_specs().map(lambda s: s[0]), " \t", "; MaxNodes: 4\n"))
@example("; MaxRuntime: inf\n" + SWF_LINE)
@example("; MaxNodes: 1e400\n" + SWF_LINE)
@example(SWF_LINE.replace(" 1 60 ", " 1e12 60 "))  # no header: 10^12 one-processor nodes
@example(SWF_LINE.replace(" 1 60 ", " nan 60 ").replace(" 10 1 ", " 10 nan "))
@example(SWF_LINE.replace(" 1 60 ", " 1e300 60 "))
@example(SWF_LINE.replace(" 10 1 ", " 1e308 1 "))  # runtime x estimate factor: inf
@example(SWF_LINE.replace("1 0 ", "1 1e308 ", 1) + SWF_LINE.replace("1 0 ", "2 -1e308 ", 1))  # rebased: inf
@example("; c\x0c\n1 0 0 10 x -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n")  # form feed: not a line end
def test_swf_garbage(scratch: Path, data: str | bytes) -> None:
    load_file(put(scratch, "g.swf", data))


@fuzz
@given(swf_specs())
def test_swf_round_trip(scratch: Path, spec: tuple[str, list[SwfJob], int | None, list[int]]) -> None:
    text, jobs, capacity, _ = spec
    w = load_file(put(scratch, "rt.swf", text))
    assert w is not None
    check_round_trip(w, swf_expect(jobs, capacity), ("id", "submit", "runtime", "gpus", "user", "account"))
    assert w.cluster.resource == "cpu"


@fuzz
@given(swf_specs(), st.data())
def test_swf_error_names_the_line(
    scratch: Path, spec: tuple[str, list[SwfJob], int | None, list[int]], data: st.DataObject
) -> None:
    text, jobs, _, starts = spec
    if not jobs:
        return
    k = data.draw(st.integers(0, len(jobs) - 1))
    lines = NEWLINE.split(text)
    row = lines[starts[k] - 1].split()
    if data.draw(st.booleans()):
        row[data.draw(st.integers(0, 17))] = data.draw(st.sampled_from(["x", "1e400", "nan", "1,5", "--1"]))
    else:
        del row[data.draw(st.integers(1, 17)) :]
    lines[starts[k] - 1] = " ".join(row)
    path = put(scratch, "line.swf", "\n".join(lines))
    with pytest.raises(InputFileError) as err:
        load_workload(str(path))
    check_error(err.value, path)
    assert err.value.line == starts[k]


# ================================================================ sacct -P

SACCT_TEXT = text_field(exclude="|\n\r", min_size=0)  # -P separates with '|' and ends records with LF
SACCT_ID = text_field(exclude="|\n\r.") | st.sampled_from(["7", "7#2", "7#3", "12_[0-3]", "8_1"])
TRES_TYPE = text_field(exclude="|\n\r,=:", max_size=6)


@dataclass
class SacctJob:
    kind: str  # job, step, never, running
    id: str
    submit: int
    start: int
    end: int
    limit: int | None  # None: an unknown-limit word
    limit_text: str
    gpus: int
    types: tuple[str, ...]
    cpus: int
    mem_mb: int
    nodes: int
    text: dict[str, str]  # User, Account, Partition, QOS, JobName...


@st.composite
def sacct_jobs(draw: st.DrawFn, text_cols: tuple[str, ...]) -> SacctJob:
    kind = draw(st.sampled_from(["job", "job", "job", "job", "step", "never", "running"]))
    submit = draw(st.integers(10**9, 2 * 10**9))
    start = submit + draw(st.integers(0, 10**5))
    limit = draw(st.none() | st.integers(1, 10**5).map(lambda m: m * 60))
    if limit is None:
        limit_text = draw(st.sampled_from(["Partition_Limit", "UNLIMITED", "INFINITE", "", "unlimited"]))
    else:
        limit_text = slurm_duration(limit, draw(st.integers(0, 2)))
    gpus = draw(st.integers(0, 8))
    types = tuple(sorted(draw(st.lists(TRES_TYPE, max_size=2, unique=True)))) if gpus else ()
    return SacctJob(
        kind=kind,
        id=draw(SACCT_ID),
        submit=submit,
        start=start,
        end=start + draw(st.integers(0, 10**6)),
        limit=limit,
        limit_text=limit_text,
        gpus=gpus,
        types=types,
        cpus=draw(st.integers(0, 64)),
        mem_mb=draw(st.integers(0, 10**6)),
        nodes=draw(st.integers(0, 4)),
        text={c: draw(SACCT_TEXT) for c in text_cols},
    )


def tres_items(j: SacctJob, gb: bool) -> list[str]:
    items = ["billing=1"]
    if j.types:
        first = j.gpus - (len(j.types) - 1)  # typed counts add up to the total
        items += [f"gres/gpu:{t}={first if i == 0 else 1}" for i, t in enumerate(j.types)]
    if j.gpus:
        items.append(f"gres/gpu={j.gpus}")
    if j.cpus:
        items.append(f"cpu={j.cpus}")
    if j.mem_mb:
        items.append(f"mem={j.mem_mb // 1024}G" if gb and j.mem_mb % 1024 == 0 else f"mem={j.mem_mb}M")
    if j.nodes:
        items.append(f"node={j.nodes}")
    return items


@st.composite
def sacct_specs(draw: st.DrawFn) -> tuple[str, list[str], list[SacctJob], list[int], bool]:
    """(file text, lowercased column names, jobs, line of each job, trailing '|' (sacct -p))."""
    tres_cols = draw(st.sampled_from([["ReqTRES"], ["AllocTRES"], ["ReqTRES", "AllocTRES"]]))
    optional = subset(draw, ["User", "Account", "Partition", "QOS", "JobName", "State"])  # last two: ignored
    cols = shuffled(draw, ["JobID", "Submit", "Start", "End", "Timelimit", *tres_cols, *optional])
    case = draw(st.sampled_from([str, str.upper, str.lower]))
    trailing = draw(st.booleans())
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text_cols = tuple(
        c.lower() for c in cols if c in ("User", "Account", "Partition", "QOS", "JobName", "State")
    )
    jobs = draw(st.lists(sacct_jobs(text_cols), max_size=6))
    for i, j in enumerate(jobs):  # requeued runs share an id; steps are <id>.<step>
        if i and draw(st.integers(0, 4)) == 0:
            j.id = jobs[draw(st.integers(0, i - 1))].id.split(".")[0]
        if j.kind == "step":
            j.id += draw(st.sampled_from([".batch", ".0", ".extern"]))
    chunks = ["|".join(case(c) for c in cols) + ("|" if trailing else "") + eol]
    for j in jobs:
        chunks.append(draw(st.sampled_from(["", eol, " " + eol])))
        tres = ",".join(shuffled(draw, tres_items(j, draw(st.booleans()))))
        req_empty = "AllocTRES" in tres_cols and ("ReqTRES" not in tres_cols or draw(st.booleans()))
        cells = {
            "jobid": j.id,
            "submit": utc_text(j.submit),
            "start": draw(st.sampled_from(["None", "Unknown"])) if j.kind == "never" else utc_text(j.start),
            "end": "Unknown" if j.kind in ("never", "running") else utc_text(j.end),
            "timelimit": j.limit_text,
            "reqtres": "" if req_empty else tres,
            "alloctres": tres if req_empty else draw(st.sampled_from(["", "cpu=99,gres/gpu=99"])),
            **j.text,
        }
        chunks.append("|".join(cells[c.lower()] for c in cols) + ("|" if trailing else "") + eol)
    text, starts = start_lines(chunks)
    return text, [c.lower() for c in cols], jobs, starts[2::2], trailing


def sacct_expect(cols: list[str], jobs: list[SacctJob]) -> tuple[Expect, dict[str, int]]:
    ran = [j for j in jobs if j.kind == "job"]
    want = Expect()
    want.dropped.update(never_started=sum(j.kind == "never" for j in jobs))
    want.dropped.update(still_running=sum(j.kind == "running" for j in jobs))
    gpu_trace = any(j.gpus > 0 for j in ran)
    if gpu_trace:
        want.dropped["cpu_only"] = sum(j.gpus == 0 for j in ran)
    rows = []
    for j, jid in zip(ran, unique_ids_ref([j.id for j in ran]), strict=True):
        if gpu_trace and j.gpus == 0:
            continue
        stamp = datetime.fromisoformat  # naive: local wall-clock time, as sacct prints it
        start = stamp(utc_text(j.start)).timestamp()
        rows.append(
            {
                "id": jid,
                "abs_submit": stamp(utc_text(j.submit)).timestamp(),
                "runtime": stamp(utc_text(j.end)).timestamp() - start,
                "gpus": j.gpus if gpu_trace else j.cpus,
                "gpu_types": j.types,
                "cpus": j.cpus,
                "mem_mb": j.mem_mb,
                "nodes": j.nodes,
                "user": j.text["user"] if "user" in cols else "",
                "account": j.text["account"] if "account" in cols else "",
                "partition": j.text["partition"].split(",")[0] if "partition" in cols else "",
                "qos": j.text["qos"] if "qos" in cols else "",
                "limit": float(j.limit) if j.limit else math.nan,
            }
        )
    want.estimates = "trace" if any(r["limit"] > 0 for r in rows) else "user"
    kept = []
    for r in rows:
        if r["runtime"] <= 0:
            want.dropped["runtime_not_positive"] += 1
        elif r["gpus"] == 0:
            want.dropped["no_resources"] += 1
        else:
            kept.append(r)
    want.jobs = in_submit_order(kept)
    notes = {
        "job_steps_skipped": sum(j.kind == "step" for j in jobs),
        "renamed_duplicate_ids": len(ran) - len({j.id for j in ran}),
    }
    return want, notes


# the job fields both the sacct and the CSV loaders carry through (sacct adds QOS)
CSV_FIELDS = ("id", "submit", "runtime", "gpus", "gpu_types", "cpus", "mem_mb", "nodes", "user", "account",
              "partition")
SACCT_FIELDS = (*CSV_FIELDS, "qos")
SACCT_HEAD = "JobID|Submit|Start|End|ReqTRES|Timelimit\n"
SACCT_ROW = "1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|{tres}|{limit}\n"


@fuzz
@given(garbage(sacct_specs().map(lambda s: s[0]), "|,=", SACCT_HEAD))
@example(SACCT_HEAD + SACCT_ROW.format(tres="gres/gpu=1,mem=1e400M", limit="1"))
@example(SACCT_HEAD + SACCT_ROW.format(tres="gres/gpu=1,mem=1e30M", limit="1"))
@example(SACCT_HEAD + SACCT_ROW.format(tres="gres/gpu=" + "9" * 25, limit="1"))
@example(SACCT_HEAD + SACCT_ROW.format(tres="gres/gpu=1,node=" + "9" * 12, limit="1"))
@example(SACCT_HEAD + SACCT_ROW.format(tres="gres/gpu=-2,cpu=-4", limit="1"))
@example(SACCT_HEAD + SACCT_ROW.format(tres="gres/gpu=1", limit="0"))  # the only limit is 0
@example(SACCT_HEAD + SACCT_ROW.format(tres="gres/gpu=1", limit="9" * 320 + "-00"))
@example(
    SACCT_HEAD
    + "".join(
        SACCT_ROW.replace("1|", i + "|", 1).format(tres="gres/gpu=1", limit="1") for i in ("1", "1", "1#2")
    )
)  # a requeued job renamed onto a real id
@example(SACCT_HEAD + SACCT_ROW.replace("1|", "x\x1cy|", 1).format(tres="gres/gpu=1", limit="soon"))
def test_sacct_garbage(scratch: Path, data: str | bytes) -> None:
    load_file(put(scratch, "g.sacct", data))


@fuzz
@given(sacct_specs())
def test_sacct_round_trip(
    scratch: Path, spec: tuple[str, list[str], list[SacctJob], list[int], bool]
) -> None:
    text, cols, jobs, _, _ = spec
    want, notes = sacct_expect(cols, jobs)
    w = load_file(put(scratch, "rt.sacct", text))
    assert w is not None
    check_round_trip(w, want, SACCT_FIELDS)
    assert {k: w.meta[k] for k in notes} == notes


@fuzz
@given(sacct_specs(), st.data())
def test_sacct_corrupt_record_is_refused_on_its_line(
    scratch: Path, spec: tuple[str, list[str], list[SacctJob], list[int], bool], data: st.DataObject
) -> None:
    """A '|' inside a name (sacct does not escape it) or a bad time in one record: an error naming that
    record's line, never a record read with every later field shifted (e.g. when its last field is
    empty) nor a line number shifted by the blank lines and odd line separators before it."""
    text, cols, jobs, starts, _ = spec
    if not jobs:
        return
    k = data.draw(st.integers(0, len(jobs) - 1))
    lines = NEWLINE.split(text)
    cells = lines[starts[k] - 1].split("|")
    names = [c for c in cols if c in ("jobid", "user", "account", "partition", "qos", "jobname", "state")]
    if jobs[k].kind == "step" or data.draw(st.booleans()):  # steps are skipped before their times are read
        at = cols.index(data.draw(st.sampled_from(names)))
        cut = data.draw(st.integers(0, len(cells[at])))
        cells[at] = cells[at][:cut] + "|" + cells[at][cut:]
    else:
        col = data.draw(
            st.sampled_from(["submit", "timelimit", *([] if jobs[k].kind == "never" else ["start"])])
        )
        cells[cols.index(col)] = data.draw(
            st.sampled_from(["yesterday", "1:2:3:4", "-5", "2024-13-01T00:00:00"])
        )
    lines[starts[k] - 1] = "|".join(cells)
    path = put(scratch, "bad.sacct", "\n".join(lines))
    with pytest.raises(InputFileError) as err:
        load_workload(str(path))
    check_error(err.value, path)
    assert err.value.line == starts[k], str(err.value)


# ================================================================ plain CSV

CSV_TEXT = text_field(min_size=0)  # csv quoting carries anything
CSV_TYPE = text_field(exclude="|", max_size=6)
CSV_OPTIONAL = ["time_limit", "gpu_type", "user", "account", "partition", "cpus", "mem_mb", "nodes"]


@dataclass
class CsvJob:
    cells: dict[str, str]
    submit: float
    runtime: float
    gpus: int
    limit: float
    types: tuple[str, ...]
    ints: dict[str, int]


@st.composite
def csv_jobs(draw: st.DrawFn, jid: str, cols: list[str]) -> CsvJob:
    epoch = draw(st.integers(0, 2 * 10**9))
    style = draw(st.integers(0, 4))
    if style == 0:
        submit_text, submit = str(epoch), float(epoch)
    elif style == 1:
        submit = draw(st.floats(0, 2e9, allow_nan=False))
        submit_text = repr(submit)
    else:
        tz = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))][style - 2]
        stamp = datetime.fromtimestamp(epoch, tz).isoformat()
        submit_text, submit = (stamp[:-6] if style == 2 else stamp), float(epoch)  # naive is UTC
    runtime = draw(st.sampled_from([0.0, 1.0]) | st.floats(0, 1e6, allow_nan=False))
    limit_kind = draw(st.integers(0, 3))
    if limit_kind == 0:
        limit_text, limit = "", math.nan
    elif limit_kind == 1:
        limit = draw(st.floats(1, 1e7, allow_nan=False))
        limit_text = repr(limit)
    elif limit_kind == 2:
        minutes = draw(st.integers(1, 10**5))
        limit, limit_text = minutes * 60.0, slurm_duration(minutes * 60, draw(st.integers(0, 1)))
    else:
        limit_text, limit = draw(st.sampled_from(["0", "UNLIMITED", "-5"])), math.nan
    types = draw(st.lists(CSV_TYPE, max_size=3)) if "gpu_type" in cols else []
    gpus = draw(st.integers(0, 8))
    ints = {c: draw(st.integers(0, 4 if c == "nodes" else 10**6)) for c in ("cpus", "mem_mb", "nodes")}
    cells = {
        "id": jid,
        "submit": submit_text,
        "runtime": repr(runtime) if draw(st.booleans()) else f"{runtime:.17g}",
        "gpus": str(gpus),
        "time_limit": limit_text,
        "gpu_type": draw(st.sampled_from(["|", " | "])).join(types),
        **{c: draw(CSV_TEXT) if c in cols else "" for c in ("user", "account", "partition")},
        **{c: (str(v) if v or draw(st.booleans()) else "") for c, v in ints.items()},
    }
    return CsvJob(cells, submit, runtime, gpus, limit, tuple(types), ints)


@st.composite
def csv_specs(draw: st.DrawFn) -> tuple[str, list[str], list[CsvJob], list[int]]:
    """(file text, columns, jobs, line each job starts on)."""
    cols = shuffled(draw, ["id", "submit", "runtime", "gpus", *subset(draw, CSV_OPTIONAL)])
    ids = draw(st.lists(text_field(max_size=8), max_size=6, unique=True))
    jobs = [draw(csv_jobs(jid, cols)) for jid in ids]
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    eol = draw(st.sampled_from(["\r\n", "\n"]))

    header = [draw(st.sampled_from([c, c.upper(), f" {c} "])) for c in cols]
    chunks = [csv_row(header, eol, quoting)]
    for j in jobs:
        chunks.append(draw(st.sampled_from(["", eol, ",,," + eol])))
        chunks.append(csv_row([j.cells[c] for c in cols], eol, quoting))
    text, starts = start_lines(chunks)
    return text, cols, jobs, starts[2::2]


def csv_expect(cols: list[str], jobs: list[CsvJob]) -> Expect | None:
    """None: the documented 'no job requests a GPU' error."""
    if not any(j.gpus > 0 for j in jobs):
        return None
    want = Expect()
    want.dropped["cpu_only"] = sum(j.gpus == 0 for j in jobs)
    gpu_jobs = [j for j in jobs if j.gpus > 0]
    limits = "time_limit" in cols and any(j.limit > 0 for j in gpu_jobs)
    want.estimates = "trace" if limits else "user"
    kept = []
    for j in gpu_jobs:
        if not j.runtime > 0:
            want.dropped["runtime_not_positive"] += 1
            continue
        kept.append(
            {
                "id": j.cells["id"],
                "abs_submit": j.submit,
                "runtime": j.runtime,
                "gpus": j.gpus,
                "gpu_types": j.types if "gpu_type" in cols else (),
                **{c: (j.ints[c] if c in cols else 0) for c in ("cpus", "mem_mb", "nodes")},
                **{c: (j.cells[c] if c in cols else "") for c in ("user", "account", "partition")},
                "limit": j.limit if "time_limit" in cols else math.nan,
            }
        )
    want.jobs = in_submit_order(kept)
    return want



CSV_HEAD = "id,submit,runtime,gpus,time_limit,gpu_type,user,account,partition,cpus,mem_mb,nodes\n"


@fuzz
@given(garbage(csv_specs().map(lambda s: s[0]), ",", CSV_HEAD))
@example(CSV_HEAD + "a,1e308,10,1,,,,,,,,\nb,-1e308,10,1,,,,,,,,\n")  # rebased submit: inf
@example(CSV_HEAD + "a,0,10,1,,,,,,," + "9" * 25 + ",\n")
@example(CSV_HEAD + "a,0,10," + "9" * 25 + ",,,,,,,,\n")
@example(CSV_HEAD + "a,0,10,1,,,,,,,,1000000000000\n")  # 10^12 nodes in the inferred cluster
@example(CSV_HEAD + "a,0,10,1,,,,,,,," + "9" * 400 + "\n")
@example(CSV_HEAD + "".join(f"j{i},0,10,1,,t{i},,,,,,\n" for i in range(70)))  # 70 GPU types
@example('id,submit,runtime,gpus\na,0,10,1\n"' + "x" * 140_000)  # a field past csv's size limit
def test_csv_garbage(scratch: Path, data: str | bytes) -> None:
    load_file(put(scratch, "g.csv", data))


@fuzz
@given(csv_specs())
def test_csv_round_trip(scratch: Path, spec: tuple[str, list[str], list[CsvJob], list[int]]) -> None:
    text, cols, jobs, _ = spec
    want = csv_expect(cols, jobs)
    path = put(scratch, "rt.csv", text)
    if want is None:
        with pytest.raises(InputFileError, match="no job requests a GPU") as err:
            load_workload(str(path))
        check_error(err.value, path)
        return
    w = load_file(path)
    assert w is not None
    check_round_trip(w, want, CSV_FIELDS)


@fuzz
@given(csv_specs(), st.data())
def test_csv_error_names_the_line(
    scratch: Path, spec: tuple[str, list[str], list[CsvJob], list[int]], data: st.DataObject
) -> None:
    """Blank lines and quoted line breaks before a bad record must not shift the reported line."""
    text, cols, jobs, starts = spec
    if not jobs:
        return
    k = data.draw(st.integers(0, len(jobs) - 1))
    col = data.draw(st.sampled_from([c for c in cols if c in ("submit", "runtime", "gpus", "cpus", "nodes")]))
    bad = data.draw(st.sampled_from(["ten", "-3", "1.5.5", "0x10"]))
    if bad == "-3" and col in ("submit", "runtime"):
        bad = "ten"
    head, rest = text[: _offset(text, starts[k])], text[_offset(text, starts[k]) :]
    cells = next(csv.reader(io.StringIO(rest, newline="")))
    cells[cols.index(col)] = bad
    path = put(scratch, "line.csv", head + csv_row(cells) + rest[_record_end(rest) :])
    with pytest.raises(InputFileError) as err:
        load_workload(str(path))
    check_error(err.value, path)
    assert err.value.line == starts[k], str(err.value)


def _offset(text: str, line: int) -> int:
    """Character offset where 1-based ``line`` starts."""
    pos = 0
    for _ in range(line - 1):
        m = NEWLINE.search(text, pos)
        assert m is not None
        pos = m.end()
    return pos


def _record_end(text: str) -> int:
    """Offset just past the first CSV record of ``text`` (quoted line breaks included)."""
    stream = io.StringIO(text, newline="")
    reader = csv.reader(stream)
    next(reader)
    return _offset(text, reader.line_num + 1) if reader.line_num < len(NEWLINE.split(text)) else len(text)


# ================================================================ cluster files (CSV and scontrol -o)

# a leading '#' makes the row a comment; a leading U+FEFF on the first line of a file without header is
# the BOM file_text drops (spreadsheet exports add one)
PREFIX = text_field(exclude="\n\r").filter(lambda p: not p.startswith(("#", "\ufeff")))
PART_NAME = text_field(exclude="|\n\r", max_size=6)


@dataclass
class Group:
    prefix: str
    count: int
    gtype: str
    gpus: int
    cpus: int
    mem: int
    parts: tuple[str, ...]


@st.composite
def cluster_csv_specs(draw: st.DrawFn) -> tuple[str, list[Group], bool]:
    prefixes = draw(st.lists(PREFIX, min_size=1, max_size=5, unique=True))
    with_parts = draw(st.booleans())
    groups = [
        Group(
            p,
            draw(st.integers(1, 12)),
            draw(text_field(min_size=0, max_size=6)),
            draw(st.integers(0, 8)),
            draw(st.integers(1, 128)),
            draw(st.integers(0, 10**6)),
            tuple(draw(st.lists(PART_NAME, max_size=3, unique=True))) if with_parts else (),
        )
        for p in prefixes
    ]
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = ""
    if draw(st.booleans()):
        text += csv_row(list(clusterfile.CSV_COLUMNS[: 7 if with_parts else 6]), eol)
    for g in groups:
        if draw(st.booleans()):
            text += draw(st.sampled_from(["# a comment, with commas" + eol, eol, ",,,,," + eol]))
        text += csv_row(
            [g.prefix, g.count, g.gtype, g.gpus, g.cpus, g.mem, *(["|".join(g.parts)] if with_parts else [])],
            eol,
        )
    return text, groups, with_parts


def cluster_csv_expect(groups: list[Group]) -> list[tuple[str, str, int, int, int, tuple[str, ...]]]:
    cpu = all(g.gpus == 0 for g in groups)
    return [
        (
            f"{g.prefix}-{i}",
            "" if cpu else (g.gtype or ("gpu" if g.gpus else "")),
            g.cpus if cpu else g.gpus,
            g.cpus,
            g.mem,
            g.parts or ("default",),
        )
        for g in groups
        for i in range(1, g.count + 1)
    ]


def node_tuples(spec: ClusterSpec) -> list[tuple[str, str, int, int, int, tuple[str, ...]]]:
    return [(n.name, n.gpu_type, n.gpus, n.cpus, n.mem_mb, n.partitions) for n in spec.nodes]


CLUSTER_ROW = "n,2,v100,8,32,1000\n"


def _cluster_or_error(scratch: Path, name: str, data: str | bytes) -> None:
    """A cluster file gives a valid cluster or one InputFileError."""
    path = put(scratch, name, data)
    spec = attempt(lambda: clusterfile.load(path), path)
    if spec is not None:
        check_cluster(spec)


@fuzz
@given(garbage(cluster_csv_specs().map(lambda s: s[0]), ",|"))
@example("n," + "9" * 12 + ",v100,8,32,1000\n")  # 10^12 nodes
@example("n,1,v100," + "9" * 25 + ",32,1000\n")
@example("n,1,v100,8,32," + "9" * 25 + "\n")
@example("prefix,count,gpu_type,gpus,cpus,mem_mb\nPrefix,2,v100,8,32,1000\n")
@example("".join(f"n{i},1,t{i},1,1,1\n" for i in range(70)))  # 70 GPU types
def test_cluster_csv_garbage(scratch: Path, data: str | bytes) -> None:
    _cluster_or_error(scratch, "g.cluster.csv", data)


@fuzz
@given(cluster_csv_specs())
def test_cluster_csv_round_trip(scratch: Path, spec: tuple[str, list[Group], bool]) -> None:
    text, groups, _ = spec
    path = put(scratch, "rt.cluster.csv", text)
    got = clusterfile.load(path)
    check_cluster(got)
    assert node_tuples(got) == cluster_csv_expect(groups)
    order = list(dict.fromkeys(p for g in groups for p in (g.parts or ("default",))))
    assert list(got.partition_names) == order
    assert got.resource == ("cpu" if all(g.gpus == 0 for g in groups) else "gpu")


# scontrol -o values hold no whitespace (str.isspace, as the parser's \S); partition lists split at ','
SC_VALUE = st.sampled_from([t for t in POOL if not any(c.isspace() for c in t)])
SC_PART = st.sampled_from([t for t in POOL if not any(c.isspace() or c == "," for c in t)])
SC_EXTRA = [
    "Arch=x86_64",
    "State=IDLE",
    "CfgTRES=cpu=8,mem=1G",
    "Weight=1",
    "OS=Linux 6.1 #1 SMP",
    "AllocTRES=",
]
SC_TYPE = st.from_regex(r"[A-Za-z][A-Za-z0-9_.\-]{0,7}", fullmatch=True)


@dataclass
class ScNode:
    name: str
    gres: str
    gpus: int
    gtype: str
    cpus: int
    mem: int
    parts: tuple[str, ...]
    extra: list[str]


@st.composite
def scontrol_specs(draw: st.DrawFn) -> tuple[str, list[ScNode], dict[str, tuple[int, int]], str]:
    """(text, nodes, partition -> (tier, job factor) from PartitionName lines, default partition)."""
    names = draw(st.lists(SC_VALUE, min_size=1, max_size=6, unique=True))
    nodes = []
    for name in names:
        gpus = draw(st.integers(0, 8))
        gtype = draw(st.sampled_from(["", "typed", "typed"]))
        gtype = draw(SC_TYPE) if gtype else ""
        form = draw(st.sampled_from(["gpu:{t}:{n}", "gpu:{t}:{n}(S:0-1)", "gres:gpu:{t}:{n}"]))
        gres = form.format(t=gtype, n=gpus).replace("::", ":") if gtype or gpus else "(null)"
        if not gtype and gpus:
            gres = f"gpu:{gpus}"
        extra = subset(draw, SC_EXTRA)
        nodes.append(
            ScNode(
                name,
                gres,
                gpus,
                gtype,
                draw(st.integers(1, 128)),
                draw(st.integers(0, 10**6)),
                tuple(draw(st.lists(SC_PART, max_size=3, unique=True))),
                extra,
            )
        )
    lines = []
    for n in nodes:
        kv = [f"Gres={n.gres}", f"CPUTot={n.cpus}", f"RealMemory={n.mem}", *n.extra]
        if n.parts or draw(st.booleans()):
            kv.append(f"Partitions={','.join(n.parts)}")
        lines.append(f"NodeName={n.name} " + " ".join(shuffled(draw, kv)))
    used = list(dict.fromkeys(p for n in nodes for p in n.parts))
    tiers: dict[str, tuple[int, int]] = {}
    default = ""
    for p in subset(draw, used):
        tiers[p] = (draw(st.integers(0, 10**4)), draw(st.integers(0, 10**4)))
        yes = draw(st.booleans())
        default = p if yes else default
        lines.append(
            f"PartitionName={p} Default={'YES' if yes else 'NO'} PriorityJobFactor={tiers[p][1]} "
            f"PriorityTier={tiers[p][0]} Nodes=ALL"
        )
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(lines) + eol, nodes, tiers, default


@fuzz
@given(garbage(scontrol_specs().map(lambda s: s[0]), " =,:", "NodeName=a CPUTot=4 "))
@example("NodeName=a CPUTot=-4 RealMemory=-1\n")
@example("NodeName=a CPUTot=4 Gres=gpu:" + "9" * 25 + "\n")
@example("NodeName=a CPUTot=" + "9" * 25 + "\n")
@example("NodeName= CPUTot=4\n")
@example("NodeName=a CPUTot=4 Partitions=p\nPartitionName=p PriorityTier=" + "9" * 25 + "\n")
def test_cluster_scontrol_garbage(scratch: Path, data: str | bytes) -> None:
    _cluster_or_error(scratch, "g.nodes", data)


@fuzz
@given(scontrol_specs())
def test_cluster_scontrol_round_trip(
    scratch: Path, spec: tuple[str, list[ScNode], dict[str, tuple[int, int]], str]
) -> None:
    text, nodes, tiers, default = spec
    got = clusterfile.load(put(scratch, "rt.nodes", text))
    check_cluster(got)
    cpu = all(n.gpus == 0 for n in nodes)
    assert node_tuples(got) == [
        (
            n.name,
            "" if cpu or not n.gpus else (n.gtype or "gpu"),
            n.cpus if cpu else n.gpus,
            n.cpus,
            n.mem,
            n.parts or ("default",),
        )
        for n in nodes
    ]
    order = list(dict.fromkeys(p for n in nodes for p in (n.parts or ("default",))))
    if default in order:
        order.remove(default)
        order.insert(0, default)
    assert list(got.partition_names) == order
    for p in got.partitions:
        assert (p.priority_tier, p.priority_job_factor) == tiers.get(p.name, (1, 1))


# ================================================================ Philly (adaptdl philly.csv)

PHILLY_HEAD = "timestamp,duration,num_gpus,gpu_time,cluster"


@dataclass
class PhillyRow:
    epoch: int
    duration: float
    gpus: int
    vc: str


@st.composite
def philly_specs(draw: st.DrawFn) -> tuple[str, list[PhillyRow], list[int]]:
    rows = [
        PhillyRow(
            draw(st.integers(1_400_000_000, 1_600_000_000)),
            draw(st.sampled_from([0.0, 66.0]) | st.floats(0, 1e7, allow_nan=False)),
            draw(st.integers(1, 16) | st.integers(1, 300)),
            draw(text_field(min_size=0, max_size=8)),
        )
        for _ in range(draw(st.integers(0, 8)))
    ]
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    extra = draw(st.booleans())
    chunks = [csv_row(PHILLY_HEAD.split(",") + (["note"] if extra else []), eol)]
    for r in rows:
        chunks.append(draw(st.sampled_from(["", eol])))
        stamp = datetime.fromtimestamp(r.epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")
        cells = [stamp, repr(r.duration), str(r.gpus), repr(r.duration * r.gpus), r.vc]
        chunks.append(csv_row(cells + (["x,y"] if extra else []), eol))
    text, starts = start_lines(chunks)
    return text, rows, starts[2::2]


@fuzz
@given(garbage(philly_specs().map(lambda s: s[0]), ",", PHILLY_HEAD + "\n"))
@example(PHILLY_HEAD + "\n,66.0,1,66.0,ab\n")  # empty timestamp: NaT
@example(PHILLY_HEAD + "\nNaT,66.0,1,66.0,ab\n")
@example(PHILLY_HEAD + "\ntoday,66.0,1,66.0,ab\n")  # 'today' would depend on the day of the load
@example(PHILLY_HEAD + "\n2017-10-09 07:01:55,66.0," + "9" * 25 + ",66.0,ab\n")
@example(PHILLY_HEAD + "\n2017-10-09 07:01:55,66.0\n")
def test_philly_garbage(scratch: Path, data: str | bytes) -> None:
    path = put(scratch, "g.philly.csv", data)
    w = attempt(lambda: load_workload("philly", path=str(path)), path)
    if w is not None:
        check_workload(w)


@fuzz
@given(philly_specs())
def test_philly_round_trip(scratch: Path, spec: tuple[str, list[PhillyRow], list[int]]) -> None:
    text, rows, _ = spec
    path = put(scratch, "rt.philly.csv", text)
    w = load_workload("philly", path=str(path))
    check_workload(w)
    per_node, nodes = philly.NODE_GPUS, len(philly.cluster().nodes)
    want = Expect()
    kept = []
    for i, r in enumerate(rows, start=1):
        if not r.duration > 0:
            want.dropped["runtime_not_positive"] += 1
        elif -(-r.gpus // per_node) > nodes:
            want.dropped["infeasible"] += 1
        else:
            kept.append(
                {
                    "id": f"philly-{i}",
                    "abs_submit": float(r.epoch),
                    "runtime": r.duration,
                    "gpus": r.gpus,
                    "user": r.vc,
                    "account": r.vc,
                }
            )
    want.jobs = in_submit_order(kept)
    check_round_trip(w, want, ("id", "submit", "runtime", "gpus", "user", "account"))


@fuzz
@given(philly_specs(), st.data())
def test_philly_error_names_the_line(
    scratch: Path, spec: tuple[str, list[PhillyRow], list[int]], data: st.DataObject
) -> None:
    text, rows, starts = spec
    if not rows:
        return
    k = data.draw(st.integers(0, len(rows) - 1))
    col, bad = data.draw(
        st.sampled_from([(0, "2017-13-09 07:01:55"), (0, "soon"), (1, "sixty"), (2, "0"), (2, "x")])
    )
    at = _offset(text, starts[k])
    cells = next(csv.reader(io.StringIO(text[at:], newline="")))
    cells[col] = bad
    path = put(scratch, "line.philly.csv", text[:at] + csv_row(cells) + text[at + _record_end(text[at:]) :])
    with pytest.raises(InputFileError) as err:
        load_workload("philly", path=str(path))
    check_error(err.value, path)
    assert err.value.line == starts[k], str(err.value)


# ================================================================ Alibaba openb pod and node lists

POD_TEXT = text_field(min_size=0, max_size=8)


@dataclass
class Pod:
    name: str
    cpu_milli: int
    mem: int
    gpus: int
    milli: str
    spec: str
    qos: str
    created: int
    scheduled: int | None
    deleted: int


@st.composite
def pod_specs(draw: st.DrawFn) -> tuple[str, list[Pod]]:
    names = draw(st.lists(text_field(max_size=8), max_size=6, unique=True))
    pods = []
    for name in names:
        created = draw(st.integers(0, 10**7))
        sched = draw(st.none() | st.integers(created, created + 10**5))
        pods.append(
            Pod(
                name,
                draw(st.integers(0, 64_000)),
                draw(st.integers(0, 10**6)),
                draw(st.integers(0, 8)),
                draw(st.sampled_from(["", "1000", "460", "0"])),
                "|".join(draw(st.lists(text_field(exclude="|", max_size=5), max_size=2))),
                draw(POD_TEXT),
                created,
                sched,
                (sched or created) + draw(st.integers(-10, 10**6)),
            )
        )
    cols = shuffled(draw, [*openb.POD_COLUMNS, *subset(draw, ["extra"])])
    pad = draw(st.sampled_from(["", " "]))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = csv_row([pad + c + pad for c in cols], eol)
    for p in pods:
        cells = {
            "name": p.name,
            "cpu_milli": p.cpu_milli,
            "memory_mib": p.mem,
            "num_gpu": p.gpus,
            "gpu_milli": p.milli,
            "gpu_spec": p.spec,
            "qos": p.qos,
            "pod_phase": "Running",
            "creation_time": p.created,
            "deletion_time": p.deleted,
            "scheduled_time": "" if p.scheduled is None else p.scheduled,
            "extra": "x",
        }
        text += csv_row([cells[c] for c in cols], eol)
    return text, pods


@dataclass
class Machine:
    name: str
    model: str
    gpus: int
    cpu_milli: int
    mem: int


@st.composite
def openb_node_specs(draw: st.DrawFn) -> tuple[str, list[Machine]]:
    names = draw(st.lists(text_field(max_size=8), min_size=1, max_size=6, unique=True))
    models = draw(st.lists(text_field(max_size=6), min_size=1, max_size=3))
    machines = [
        Machine(
            n,
            draw(st.sampled_from(models)),
            draw(st.integers(0, 8)),
            draw(st.integers(0, 128)) * 1000,
            draw(st.integers(0, 10**6)),
        )
        for n in names
    ]
    text = csv_row(list(openb.NODE_COLUMNS))
    for m in machines:
        text += csv_row([m.name, m.cpu_milli, m.mem, m.gpus, m.model])
    return text, machines


POD_HEAD = ",".join(openb.POD_COLUMNS) + "\n"
NODE_HEAD = ",".join(openb.NODE_COLUMNS) + "\n"


@fuzz
@given(garbage(pod_specs().map(lambda s: s[0]), ",|", POD_HEAD))
@example(POD_HEAD + "p1,4000\n")  # short row: DictReader fills None
@example(POD_HEAD.replace(",", ", ") + "p1,4000,1024,1,1000,V100,LS,Running,0,100,1\n")
@example(POD_HEAD + "p1," + "9" * 400 + ",1024,1,1000,V100,LS,Running,0,100,1\n")
@example(POD_HEAD + '"p\n1",x,1024,1,1000,V100,LS,Running,0,100,1\n')
def test_openb_pods_garbage(scratch: Path, data: str | bytes) -> None:
    path = put(scratch, "g.pods.csv", data)
    raw = attempt(lambda: openb.parse_pods(path.read_bytes().decode("utf-8-sig", "replace"), str(path)), path)
    if raw is not None:
        assert len(raw.ids) == len(set(raw.ids)) == len(raw.submit) == len(raw.gpus)
        assert raw.cpus is not None and raw.mem_mb is not None
        assert np.all(raw.gpus >= 0) and np.all(raw.cpus >= 0) and np.all(raw.mem_mb >= 0)


@fuzz
@given(garbage(openb_node_specs().map(lambda s: s[0]), ",", NODE_HEAD))
@example(NODE_HEAD + "n1,32000\n")
@example(NODE_HEAD + "n1,32000,1024,8,V100\nn1,32000,1024,8,V100\n")  # duplicate node names
@example(NODE_HEAD + "n1,32000,1024,-8,V100\n")
@example(NODE_HEAD + "n1,32000," + "9" * 25 + ",8,V100\n")
def test_openb_nodes_garbage(scratch: Path, data: str | bytes) -> None:
    path = put(scratch, "g.nodes.csv", data)
    text = path.read_bytes().decode("utf-8-sig", "replace")
    spec = attempt(lambda: openb.cluster(text, str(path), 1.0), path)
    if spec is not None:
        check_cluster(spec)


@fuzz
@given(pod_specs())
def test_openb_pods_round_trip(scratch: Path, spec: tuple[str, list[Pod]]) -> None:
    text, pods = spec
    raw = openb.parse_pods(text, "pods.csv")
    ran = [p for p in pods if p.scheduled is not None]
    assert raw.ids == [p.name for p in ran]
    assert raw.submit.tolist() == [float(p.created) for p in ran]
    assert raw.runtime.tolist() == [float(p.deleted - (p.scheduled or 0)) for p in ran]
    assert raw.gpus.tolist() == [p.gpus for p in ran]
    assert raw.cpus is not None and raw.cpus.tolist() == [-(-p.cpu_milli // 1000) for p in ran]
    assert raw.mem_mb is not None and raw.mem_mb.tolist() == [p.mem for p in ran]
    assert raw.gpu_types == [tuple(t.strip().lower() for t in p.spec.split("|") if t.strip()) for p in ran]
    assert raw.qos == [p.qos for p in ran]
    assert raw.dropped == {"never_scheduled": len(pods) - len(ran)}
    fractional = sum(p.gpus == 1 and 0 < int(p.milli or 0) < 1000 for p in ran)
    assert raw.notes == {"fractional_gpus_rounded_up": fractional}


@fuzz
@given(openb_node_specs(), st.booleans())
def test_openb_nodes_round_trip(scratch: Path, spec: tuple[str, list[Machine]], cpu_nodes: bool) -> None:
    text, machines = spec
    want = sorted(
        (m.name, m.model.lower(), m.gpus, m.cpu_milli // 1000, m.mem)
        for m in machines
        if m.gpus > 0 or cpu_nodes
    )
    path = put(scratch, "rt.nodes.csv", text)
    got = attempt(lambda: openb.cluster(text, str(path), 1.0, cpu_nodes=cpu_nodes), path)
    if not want:
        assert got is None  # a node list without a usable node is an error, not an empty cluster
        return
    assert got is not None
    check_cluster(got)
    assert [(n.name, n.gpu_type, n.gpus, n.cpus, n.mem_mb) for n in got.nodes] == want


@fuzz
@given(pod_specs(), openb_node_specs(), st.sampled_from(["drop", "keep"]))
def test_openb_load_round_trip(
    scratch: Path, pods_spec: tuple[str, list[Pod]], nodes_spec: tuple[str, list[Machine]], cpu_pods: str
) -> None:
    pods_text, pods = pods_spec
    pods_path, nodes_path = put(scratch, "p.csv", pods_text), put(scratch, "n.csv", nodes_spec[0])
    w = attempt(
        lambda: load_workload(
            "alibaba-openb", pods=str(pods_path), nodes=str(nodes_path), slice=1, cpu_pods=cpu_pods
        ),
        nodes_path,
    )
    if w is None:
        return
    check_workload(w)
    by_name = {p.name: p for p in pods}
    origin = min((float(by_name[j.id].created) for j in w.jobs), default=0.0)
    for j in w.jobs:
        p = by_name[j.id]
        assert (j.submit, j.runtime, j.gpus, j.cpus, j.mem_mb, j.nodes) == (
            p.created - origin,
            float(p.deleted - (p.scheduled or 0)),
            p.gpus,
            -(-p.cpu_milli // 1000),
            p.mem,
            1,
        )
    ran = sum(p.scheduled is not None for p in pods)
    assert w.meta["dropped"].get("never_scheduled", 0) == len(pods) - ran
    assert len(w.jobs) + sum(v for k, v in w.meta["dropped"].items() if k != "never_scheduled") == ran


# ================================================================ Alibaba PAI machine list


@st.composite
def machine_specs(draw: st.DrawFn) -> tuple[str, list[tuple[str, int, str, int]]]:
    """(text, rows of (gpu_type, cap_cpu, cap_mem text, cap_gpu))."""
    types = [*draw(st.lists(text_field(exclude="\n\r", max_size=6), min_size=1, max_size=3)), "CPU"]
    rows = [
        (
            draw(st.sampled_from(types)),
            draw(st.integers(0, 128)),
            draw(st.sampled_from(["512", "0", "62.5"]) | st.integers(0, 4096).map(str)),
            draw(st.integers(0, 8)),
        )
        for _ in range(draw(st.integers(0, 6)))
    ]
    text = csv_row(["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"])
    for i, (t, c, m, g) in enumerate(rows):
        text += csv_row([f"m{i}", t, c, m, g])
    return text, rows


MACHINE_HEAD = "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\n"


@fuzz
@given(garbage(machine_specs().map(lambda s: s[0]), ",", MACHINE_HEAD))
@example(MACHINE_HEAD + "m1,V100\n")  # short row: DictReader fills None
@example(MACHINE_HEAD + "m1,V100,96,inf,8\n")
@example(MACHINE_HEAD + "m1,V100,-96,512,8\n")
@example(MACHINE_HEAD + "m1,CPU,96,512,0\n")  # no GPU machine at all
@example(MACHINE_HEAD + "m1,V100,96,512," + "9" * 25 + "\n")
def test_alibaba_machines_garbage(scratch: Path, data: str | bytes) -> None:
    path = put(scratch, "g.machines.csv", data)
    w = attempt(lambda: load_workload("alibaba", machines=str(path), slice=1, jobs=30), path)
    if w is not None:
        check_workload(w)


@fuzz
@given(machine_specs())
def test_alibaba_machines_round_trip(
    scratch: Path, spec: tuple[str, list[tuple[str, int, str, int]]]
) -> None:
    text, rows = spec
    want = Counter(
        (t.lower(), g, c, int(float(m) * 1024)) for t, c, m, g in rows if g > 0 and t.lower() != "cpu"
    )
    path = put(scratch, "rt.machines.csv", text)
    got = attempt(lambda: alibaba.cluster(text, 1.0, str(path)), path)
    if not want:
        assert got is None  # no GPU machine: an error, not an empty cluster
        return
    assert got is not None
    check_cluster(got)
    assert Counter((n.gpu_type, n.gpus, n.cpus, n.mem_mb) for n in got.nodes) == want
    w = load_workload("alibaba", machines=str(path), slice=1, jobs=25)
    check_workload(w)
    assert w.cluster == got


# ================================================================ Helios (generated: options are its input)

OPTION_VALUE = st.one_of(
    st.sampled_from(TOKENS),
    st.integers(-5, 10**4),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(ANY_CHAR, max_size=6),
)


@fuzz
@given(
    st.integers(1, 60),
    st.dictionaries(
        st.sampled_from(["load", "profile", "rho", "users", "vc_fit", "max_time", "bogus"]),
        OPTION_VALUE
        | st.sampled_from(
            ["venus", "earth", "saturn", "uranus", "whole", "half", "0.5", "1/3", "7-00:00:00"]
        ),
        max_size=4,
    ),
    st.integers(0, 5),
)
@example(10, {"users": "9223372036854775808"}, 0)  # int64 overflow in the per-VC user counts
@example(10, {"users": 10**9}, 0)  # a Zipf table of 10^9 floats: 8 GB
@example(10, {"load": "1" * 400}, 0)  # float(Fraction) overflow
@example(10, {"rho": float("nan")}, 0)  # NaN passes every range check
def test_helios_options(jobs: int, opts: dict[str, Any], seed: int) -> None:
    """Any option value gives a valid workload or one ``UserError`` line naming the option."""
    try:
        w = load_workload("helios", jobs=jobs, seed=seed, **opts)
    except UserError as err:
        assert len(str(err).splitlines()) == 1 and str(err).startswith("helios")
        event("UserError")
        return
    event("loaded")
    check_workload(w)
    assert w.meta["rows"] == jobs
    for j in w.jobs:  # user, account and partition of one job name the same VC: no shifted column
        assert j.account == j.partition == j.user.split("-u")[0]
        assert 0 < j.gpus <= helios.NODE_GPUS * dict(helios.VCS)[j.partition]


# ================================================================ user files: detection


COMPRESS = {".xz": lzma.compress, ".gz": gzip.compress, ".bz2": bz2.compress}


@fuzz
@given(
    st.sampled_from(["t.txt", "t.csv", "t.swf", "t.dat", "t.sacct", "t"]),
    st.sampled_from(["", "", ".xz", ".gz", ".bz2"]),
    garbage(st.sampled_from([SACCT_HEAD, CSV_HEAD, SWF_LINE]), "|, "),
    st.sampled_from(["whole", "raw", "cut"]),
    st.integers(0, 100),
)
@example("t.txt", "", "hello world\n", "whole", 0)
@example("t.txt", "", "", "whole", 0)
@example("t.csv", ".gz", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage!!", "raw", 0)  # zlib.error
@example("t.csv", ".bz2", CSV_HEAD, "cut", 20)  # a cut .bz2: ValueError
def test_any_file_is_a_workload_or_an_input_error(
    scratch: Path, name: str, packed: str, data: str | bytes, how: str, cut: int
) -> None:
    """Whatever the name and content, plain or compressed (whole, corrupt or cut short),
    ``load_workload(path)`` gives a workload or ``InputFileError`` (an unrecognised format and a
    corrupt archive included: they are problems of that file)."""
    raw = data.encode() if isinstance(data, str) else data
    if packed and how != "raw":
        raw = COMPRESS[packed](raw)
        raw = raw[: len(raw) * cut // 100] if how == "cut" else raw
    load_file(put(scratch, name + packed, raw))
