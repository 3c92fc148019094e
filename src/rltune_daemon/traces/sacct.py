"""``sacct -P`` exports: the trace a site can take from its own Slurm accounting, e.g.

    sacct -a -X -P -S 2024-01-01 -o $COLUMNS
    COLUMNS=JobID,User,Account,Partition,Submit,Start,End,State,ReqTRES,AllocTRES,Timelimit,NodeList

The header names the columns (any order, case-insensitive). Required: JobID, Submit, Start, End,
ReqTRES or AllocTRES, Timelimit. Optional: User, Account, Partition, QOS (others are ignored). The header
also tells ``sacct -p`` (every line ends with '|') from ``-P``; sacct does not escape a '|' inside a
name, so a record with one field too many is an error on its line rather than read shifted.
Job steps (``.`` in JobID; avoid them with ``-X``) are skipped and counted; jobs that never started
(Start None/Unknown) or are still running (End Unknown) are dropped and counted. Resources come from
ReqTRES (what the job asked for; AllocTRES only when ReqTRES is empty, since allocations include
whole-node exclusivity and node-chosen GPU types). Runtime is End - Start; the requested time is
Timelimit (``Partition_Limit``/``UNLIMITED`` count as unknown and are filled by the user model).
If no job has a GPU the trace is a CPU trace (processors are the scheduled resource); otherwise
CPU-only jobs are dropped and counted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError
from rltune_daemon.formats.slurm import (
    gpus_from_tres,
    parse_duration,
    parse_memory_mb,
    parse_timestamp,
    parse_tres,
)
from rltune_daemon.traces.assemble import RawJobs, assemble, drop_cpu_only, unique_ids
from rltune_daemon.traces.context import LoadContext
from rltune_daemon.traces.inferred import from_raw
from rltune_daemon.traces.limits import MAX_NODES, bounded, parse_count, seconds, shown
from rltune_daemon.traces.resources import text_lines

REQUIRED = ("jobid", "submit", "start", "end", "timelimit")
UNKNOWN_LIMITS = {"", "partition_limit", "unlimited", "infinite", "invalid", "none", "unknown"}


def _limit(text: str) -> float:
    if text.strip().lower() in UNKNOWN_LIMITS:
        return math.nan
    return seconds(parse_duration(text), "Timelimit")  # finite: only the words above mean no limit


@dataclass(frozen=True)
class Header:
    """The header line: where each column is, how many fields a record has, and whether every line
    ends with '|' (``sacct -p``) or none does (``-P``)."""

    col: dict[str, int]
    width: int
    trailing: bool
    line: int  # 1-based: records start on the line after it

    def get(self, cells: list[str], name: str) -> str:
        i = self.col.get(name)
        return cells[i].strip() if i is not None else ""


@dataclass(frozen=True)
class Record:
    """One job line, parsed and checked; ``parse`` turns the list of them into columns."""

    id: str
    submit: float
    start: float
    runtime: float
    limit: float
    gpus: int
    gpu_types: tuple[str, ...]
    nodes: int
    cpus: int
    mem_mb: int
    user: str
    account: str
    partition: str
    qos: str


# why a line yields no job: a step is not a job (notes), the other two are jobs dropped and counted
Skip = Literal["step", "never_started", "still_running"]


def read_header(rows: list[str], path: str) -> Header:
    """The first non-blank line as a ``Header``; an empty file or missing columns are an error."""
    head_at = next((i for i, ln in enumerate(rows) if ln.strip()), None)
    if head_at is None:
        raise InputFileError(path, None, "empty file")
    header = [h.strip().lower() for h in rows[head_at].split("|")]
    # 'sacct -p' ends every line with '|', 'sacct -P' none: the header says which. Accepting either on
    # any line would read a '-P' record whose name holds a '|' and whose last field is empty as
    # complete, with every field after the name shifted by one.
    trailing = len(header) > 1 and header[-1] == ""
    if trailing:
        header.pop()
    col = {h: i for i, h in enumerate(header)}
    missing = [c for c in REQUIRED if c not in col]
    if missing or ("reqtres" not in col and "alloctres" not in col):
        need = ", ".join(
            missing + ([] if "reqtres" in col or "alloctres" in col else ["ReqTRES or AllocTRES"])
        )
        raise InputFileError(
            path,
            head_at + 1,
            f"header lacks {need}",
            "export with sacct -P -o JobID,Submit,Start,End,ReqTRES,Timelimit,...",
        )
    return Header(col, len(header), trailing, head_at + 1)


def split_record(line: str, lineno: int, head: Header, path: str) -> list[str]:
    """The fields of one record, exactly as many as the header has, or an error on its line."""
    cells = line.split("|")
    if head.trailing and not cells[-1].strip():
        cells.pop()
    if len(cells) != head.width:
        raise InputFileError(
            path,
            lineno,
            f"expected {head.width} '|'-separated fields, got {len(cells)}",
            "was the export made with -P (parsable)? sacct does not escape a '|' inside a name",
        )
    if head.trailing and line.rstrip()[-1:] != "|":
        raise InputFileError(path, lineno, "no final '|' (the header has one, as 'sacct -p' writes)")
    return cells


def read_record(cells: list[str], lineno: int, head: Header, path: str) -> Record | Skip:
    """One record's job, or why it gives none. A step is skipped before its fields are read (its
    times and TRES may be anything); a job's bad value is an error naming the job and its line."""
    jid = head.get(cells, "jobid")
    if not jid:
        raise InputFileError(path, lineno, "empty JobID")
    if "." in jid:
        return "step"
    try:
        sub = parse_timestamp(head.get(cells, "submit"))
        start = parse_timestamp(head.get(cells, "start"))
        end = parse_timestamp(head.get(cells, "end"))
        lim = _limit(head.get(cells, "timelimit"))
        tres = parse_tres(head.get(cells, "reqtres")) or parse_tres(head.get(cells, "alloctres"))
        g, gtypes = gpus_from_tres(tres)
        g = bounded(g, "gres/gpu")
        # counts go into int64 columns and size the inferred cluster node by node: bounded
        nd = parse_count(tres.get("node") or "0", "node", MAX_NODES)
        c = parse_count(tres.get("cpu") or "0", "cpu")
        m = bounded(parse_memory_mb(tres["mem"]), "mem (MB)") if tres.get("mem") else 0
    except (ValueError, KeyError) as exc:
        raise InputFileError(path, lineno, f"job {shown(jid)}: {exc}") from None
    if sub is None:
        raise InputFileError(path, lineno, f"job {shown(jid)}: Submit is unknown")
    if start is None:
        return "never_started"
    if end is None:
        return "still_running"
    return Record(
        id=jid,
        submit=sub,
        start=start,
        runtime=end - start,
        limit=lim,
        gpus=g,
        gpu_types=gtypes,
        nodes=nd,
        cpus=c,
        mem_mb=m,
        user=head.get(cells, "user"),
        account=head.get(cells, "account"),
        partition=head.get(cells, "partition").split(",")[0],
        qos=head.get(cells, "qos"),
    )


def to_columns(records: list[Record], skipped: Counter[Skip]) -> tuple[RawJobs, str]:
    """The jobs as ``RawJobs`` columns and the resource kind: ``cpu`` when no job has a GPU, and then
    processors are what ``gpus`` counts."""
    gpus = np.array([r.gpus for r in records], dtype=np.int64)
    cpus = np.array([r.cpus for r in records], dtype=np.int64)
    resource = "gpu" if np.any(gpus > 0) else "cpu"
    ids, renamed = unique_ids([r.id for r in records])  # 'sacct -D' lists requeued runs under one id
    raw = RawJobs(
        ids=ids,
        submit=np.array([r.submit for r in records], dtype=np.float64),
        runtime=np.array([r.runtime for r in records], dtype=np.float64),
        gpus=gpus if resource == "gpu" else cpus,
        limit=np.array([r.limit for r in records], dtype=np.float64),
        nodes=np.array([r.nodes for r in records], dtype=np.int64),
        cpus=cpus,
        mem_mb=np.array([r.mem_mb for r in records], dtype=np.int64),
        gpu_types=[r.gpu_types for r in records],
        user=[r.user for r in records],
        account=[r.account for r in records],
        partition=[r.partition for r in records],
        qos=[r.qos for r in records],
        start=np.array([r.start for r in records], dtype=np.float64),
        dropped={"never_started": skipped["never_started"], "still_running": skipped["still_running"]},
    )
    raw.notes.update(job_steps_skipped=skipped["step"], renamed_duplicate_ids=renamed)
    return raw, resource


def parse(text: str, path: str, on_bad: Callable[[InputFileError], None] | None = None
          ) -> tuple[RawJobs, str]:
    """Jobs and the resource kind (``gpu``/``cpu``); a malformed line raises ``InputFileError``, or, with
    ``on_bad``, is handed to it and skipped (a month of a site's accounting must not die on one line)."""
    rows = text_lines(text)
    head = read_header(rows, path)
    records: list[Record] = []
    skipped: Counter[Skip] = Counter()
    for lineno in range(head.line + 1, len(rows) + 1):
        line = rows[lineno - 1]
        if not line.strip():
            continue
        try:
            got = read_record(split_record(line, lineno, head, path), lineno, head, path)
        except InputFileError as exc:
            if on_bad is None:
                raise
            on_bad(exc)
            continue
        if isinstance(got, Record):
            records.append(got)
        else:
            skipped[got] += 1
    return to_columns(records, skipped)


def load(ctx: LoadContext, text: str, path: str) -> Workload:
    raw, resource = parse(text, path)
    # a Timelimit of 0 is no request (the user model fills it): it must not become a zero cap
    observed = raw.limit[np.isfinite(raw.limit) & (raw.limit > 0)] if raw.limit is not None else np.zeros(0)
    cap = ctx.opts.seconds("max_time", float(observed.max()) if len(observed) else ctx.default_cap)
    ctx.opts.finish()
    raw = drop_cpu_only(raw, resource)
    cluster = ctx.cluster or from_raw("sacct", raw, resource, path)
    meta = {"source": path, "format": "sacct", "resource": resource, "cluster_inferred": ctx.cluster is None}
    raw = ctx.partitions(raw, cluster, inferred=ctx.cluster is None)
    return assemble(
        "sacct", cluster, raw, estimates=ctx.estimates(raw, path), seed=ctx.seed, cap=cap, meta=meta
    )
