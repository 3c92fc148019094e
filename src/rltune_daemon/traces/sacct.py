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


def parse(text: str, path: str) -> tuple[RawJobs, str]:
    """Jobs and the resource kind (``gpu``/``cpu``); malformed lines raise ``InputFileError``."""
    rows = text_lines(text)
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
    width = len(header)

    def get(cells: list[str], name: str) -> str:
        i = col.get(name)
        return cells[i].strip() if i is not None else ""

    ids: list[str] = []
    submit: list[float] = []
    started: list[float] = []
    runtime: list[float] = []
    limit: list[float] = []
    gpus: list[int] = []
    nodes: list[int] = []
    cpus: list[int] = []
    mem: list[int] = []
    types: list[tuple[str, ...]] = []
    user: list[str] = []
    account: list[str] = []
    part: list[str] = []
    qos: list[str] = []
    steps = never = running = 0
    for lineno in range(head_at + 2, len(rows) + 1):
        line = rows[lineno - 1]
        if not line.strip():
            continue
        cells = line.split("|")
        if trailing and not cells[-1].strip():
            cells.pop()
        if len(cells) != width:
            raise InputFileError(
                path,
                lineno,
                f"expected {width} '|'-separated fields, got {len(cells)}",
                "was the export made with -P (parsable)? sacct does not escape a '|' inside a name",
            )
        if trailing and line.rstrip()[-1:] != "|":
            raise InputFileError(path, lineno, "no final '|' (the header has one, as 'sacct -p' writes)")
        jid = get(cells, "jobid")
        if not jid:
            raise InputFileError(path, lineno, "empty JobID")
        if "." in jid:
            steps += 1
            continue
        try:
            sub = parse_timestamp(get(cells, "submit"))
            start = parse_timestamp(get(cells, "start"))
            end = parse_timestamp(get(cells, "end"))
            lim = _limit(get(cells, "timelimit"))
            tres = parse_tres(get(cells, "reqtres")) or parse_tres(get(cells, "alloctres"))
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
            never += 1
            continue
        if end is None:
            running += 1
            continue
        ids.append(jid)
        submit.append(sub)
        started.append(start)
        runtime.append(end - start)
        limit.append(lim)
        gpus.append(g)
        nodes.append(nd)
        cpus.append(c)
        mem.append(m)
        types.append(gtypes)
        user.append(get(cells, "user"))
        account.append(get(cells, "account"))
        part.append(get(cells, "partition").split(",")[0])
        qos.append(get(cells, "qos"))
    g_arr = np.array(gpus, dtype=np.int64)
    c_arr = np.array(cpus, dtype=np.int64)
    resource = "gpu" if np.any(g_arr > 0) else "cpu"
    ids, renamed = unique_ids(ids)  # 'sacct -D' lists requeued runs under one id
    raw = RawJobs(
        ids=ids,
        submit=np.array(submit, dtype=np.float64),
        runtime=np.array(runtime, dtype=np.float64),
        gpus=g_arr if resource == "gpu" else c_arr,
        limit=np.array(limit, dtype=np.float64),
        nodes=np.array(nodes, dtype=np.int64),
        cpus=c_arr,
        mem_mb=np.array(mem, dtype=np.int64),
        gpu_types=types,
        user=user,
        account=account,
        partition=part,
        qos=qos,
        start=np.array(started, dtype=np.float64),
        dropped={"never_started": never, "still_running": running},
    )
    raw.notes.update(job_steps_skipped=steps, renamed_duplicate_ids=renamed)
    return raw, resource


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
