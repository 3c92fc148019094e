"""Plain CSV traces: the simplest format a user can write or export from a notebook.

Header required; columns in any order: ``id,submit,runtime,gpus`` and optionally
``time_limit,gpu_type,user,account,partition,cpus,mem_mb,nodes``. ``submit`` is seconds or ISO-8601
(naive times are read as UTC so daylight-saving changes cannot reorder jobs); ``runtime`` seconds;
``time_limit`` seconds or a Slurm duration (empty: unknown, filled by the user model); ``gpu_type``
one type or several separated by ``|`` (empty: any). Unknown columns are an error (a misspelt
``time_limit`` must not silently switch the estimate model). ``rltune trace export`` writes this format.
"""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime

import numpy as np

from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError
from rltune_daemon.formats.slurm import parse_duration
from rltune_daemon.traces.assemble import RawJobs, assemble, drop_cpu_only
from rltune_daemon.traces.context import LoadContext
from rltune_daemon.traces.inferred import from_raw
from rltune_daemon.traces.limits import MAX_COUNT, MAX_NODES, seconds, shown
from rltune_daemon.traces.resources import lines

REQUIRED = ("id", "submit", "runtime", "gpus")
OPTIONAL = ("time_limit", "gpu_type", "user", "account", "partition", "cpus", "mem_mb", "nodes")
COLUMNS = REQUIRED + OPTIONAL


def _time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        stamp = datetime.fromisoformat(text)
        return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def _limit(text: str) -> float:
    if not text:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = parse_duration(text)
    return value if math.isfinite(value) and value > 0 else math.nan


def _records(text: str, path: str) -> tuple[list[str] | None, list[tuple[int, list[str]]]]:
    """The header and the non-blank rows with the line each starts on (a quoted field may span lines,
    and blank lines are skipped: a row's index does not give its line)."""
    reader = csv.reader(lines(text))
    rows: list[tuple[int, list[str]]] = []
    header = None
    try:
        header = next(reader, None)
        end = reader.line_num
        for row in reader:
            start, end = end + 1, reader.line_num
            if row and any(cell.strip() for cell in row):
                rows.append((start, row))
    except csv.Error as exc:  # e.g. a field past csv.field_size_limit(): an unclosed quote
        raise InputFileError(path, reader.line_num, f"not a readable CSV: {exc}") from None
    return header, rows


def parse(text: str, path: str) -> RawJobs:
    header, rows = _records(text, path)
    if header is None:
        raise InputFileError(path, None, "empty file")
    names = [h.strip().lower() for h in header]
    unknown = [h for h in names if h not in COLUMNS]
    missing = [c for c in REQUIRED if c not in names]
    if unknown or missing:
        problem = "; ".join(
            filter(
                None,
                [
                    f"unknown column(s) {', '.join(map(shown, unknown))}" if unknown else "",
                    f"missing column(s) {', '.join(missing)}" if missing else "",
                ],
            )
        )
        raise InputFileError(path, 1, problem, f"columns: {','.join(COLUMNS)}")
    col = {h: i for i, h in enumerate(names)}
    cols: dict[str, list[str]] = {c: [] for c in COLUMNS}
    starts = [line for line, _ in rows]
    for line, row in rows:
        if len(row) != len(names):
            raise InputFileError(path, line, f"expected {len(names)} fields, got {len(row)}")
        for c in COLUMNS:
            cols[c].append(row[col[c]].strip() if c in col else "")
    n = len(cols["id"])
    submit = np.empty(n)
    runtime = np.empty(n)
    limit = np.empty(n)
    ints = {c: np.zeros(n, dtype=np.int64) for c in ("gpus", "cpus", "mem_mb", "nodes")}
    # nodes size the inferred cluster one node at a time; the rest must fit the int64 columns
    highest = {"gpus": MAX_COUNT, "cpus": MAX_COUNT, "mem_mb": MAX_COUNT, "nodes": MAX_NODES}
    i = 0
    try:
        for i in range(n):
            submit[i] = seconds(_time(cols["submit"][i]), "submit")
            runtime[i] = seconds(float(cols["runtime"][i]), "runtime")
            limit[i] = _limit(cols["time_limit"][i])
            if math.isfinite(limit[i]):  # NaN: unknown, filled by the user model
                seconds(limit[i], "time_limit")
            for c, arr in ints.items():
                value = int(cols[c][i]) if cols[c][i] else 0
                if value > highest[c]:
                    raise ValueError(f"{c} {cols[c][i][:20]} is more than {highest[c]:,}")
                arr[i] = max(value, -1)  # any negative is reported below; -10^30 must not overflow
            if not cols["id"][i]:
                raise ValueError("empty id")
    except ValueError as exc:
        raise InputFileError(path, starts[i], f"bad value: {exc}") from None
    lowest = np.stack(list(ints.values())).min(axis=0)
    if np.any(lowest < 0):
        bad = int(np.flatnonzero(lowest < 0)[0])
        raise InputFileError(path, starts[bad], "gpus, cpus, mem_mb and nodes must be >= 0")
    dup = _first_duplicate(cols["id"])
    if dup is not None:
        raise InputFileError(path, starts[dup], f"duplicate id {cols['id'][dup]!r}")
    return RawJobs(
        ids=cols["id"],
        submit=submit,
        runtime=runtime,
        gpus=ints["gpus"],
        limit=limit if "time_limit" in col else None,
        nodes=ints["nodes"],
        cpus=ints["cpus"],
        mem_mb=ints["mem_mb"],
        gpu_types=[tuple(t.strip() for t in v.split("|") if t.strip()) for v in cols["gpu_type"]],
        user=cols["user"],
        account=cols["account"],
        partition=cols["partition"],
    )


def _first_duplicate(ids: list[str]) -> int | None:
    seen: set[str] = set()
    for i, v in enumerate(ids):
        if v in seen:
            return i
        seen.add(v)
    return None


def load(ctx: LoadContext, text: str, path: str) -> Workload:
    raw = parse(text, path)
    if not np.any(raw.gpus > 0):
        raise InputFileError(path, None, "no job requests a GPU", "CPU-only traces: use the SWF format")
    cap = ctx.opts.seconds("max_time", ctx.default_cap)
    ctx.opts.finish()
    raw = drop_cpu_only(raw, "gpu")
    cluster = ctx.cluster or from_raw("csv", raw, "gpu", path)
    meta = {"source": path, "format": "csv", "cluster_inferred": ctx.cluster is None}
    raw = ctx.partitions(raw, cluster, inferred=ctx.cluster is None)
    return assemble(
        "csv", cluster, raw, estimates=ctx.estimates(raw, path), seed=ctx.seed, cap=cap, meta=meta
    )
