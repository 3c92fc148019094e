"""Standard Workload Format (Parallel Workloads Archive): 18 whitespace-separated fields per job,
``;`` header comments such as ``; MaxNodes: 128`` and ``; MaxProcs: 128``.

SWF logs are CPU traces, so processors are the scheduled resource: the cluster has ``MaxNodes`` nodes of
``MaxProcs // MaxNodes`` processors (``ClusterSpec(resource="cpu")``, no GPU type) and ``Job.gpus``
holds the requested processors (field 8, or the allocated ones, field 5, when it is -1). Fields used:
1 id, 2 submit, 4 run time, 9 requested time (-1: unknown, filled by the user model), 12 user,
15 queue (or 16 partition when the queue is -1) as the account. A header without MaxNodes/MaxProcs
gives a cluster of one-processor nodes, as many as the largest job needs (recorded in ``meta``).
"""

from __future__ import annotations

import math
import re

import numpy as np

from rltune_daemon.domain.cluster import DEFAULT_PARTITION, ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError
from rltune_daemon.traces.assemble import RawJobs, assemble, unique_ids
from rltune_daemon.traces.context import LoadContext
from rltune_daemon.traces.limits import MAX_COUNT, MAX_NODES, MAX_SECONDS
from rltune_daemon.traces.resources import text_lines

FIELDS = 18
MEM_PER_PROC_MB = 1024  # SWF has no node memory; nominal, jobs use a proportional share
_HEADER = re.compile(r"^;\s*(\w+)\s*:\s*(.*?)\s*$")


def parse(text: str, path: str) -> tuple[RawJobs, dict[str, str]]:
    header: dict[str, str] = {}
    ids: list[str] = []
    vals: list[list[float]] = []
    for lineno, line in enumerate(text_lines(text), start=1):
        s = line.strip()
        if not s:
            continue
        if s.startswith(";"):
            m = _HEADER.match(s)
            if m:
                header.setdefault(m.group(1), m.group(2))
            continue
        parts = s.split()
        if len(parts) < FIELDS:
            raise InputFileError(
                path,
                lineno,
                f"expected {FIELDS} fields, got {len(parts)}",
                "SWF: job submit wait run procs cpu mem reqprocs reqtime reqmem status "
                "user group exe queue partition prev think",
            )
        try:
            row = [float(x) for x in parts[:FIELDS]]
        except ValueError:
            raise InputFileError(path, lineno, "non-numeric field") from None
        # float() also reads nan/inf/1e400, which SWF never writes: NaN processors would cast to int64
        # as -2^63, a huge count would size the cluster, 1e308 s would overflow the estimate model
        bad = next((i for i, v in enumerate(row) if not abs(v) <= MAX_SECONDS), None)
        if bad is not None:
            problem = f"field {bad + 1} is not a number within ±{MAX_SECONDS:.0e}: {parts[bad][:20]!r}"
            raise InputFileError(path, lineno, problem)
        asked = row[7] if row[7] > 0 else row[4]
        if asked > MAX_COUNT:
            raise InputFileError(path, lineno, f"{asked:.0f} processors: more than {MAX_COUNT:,}")
        vals.append(row)
        ids.append(parts[0])
    a = np.array(vals, dtype=np.float64).reshape(-1, FIELDS)
    procs = np.where(a[:, 7] > 0, a[:, 7], a[:, 4]).astype(np.int64)
    limit = np.where(a[:, 8] > 0, a[:, 8], math.nan)
    user = ["" if u < 0 else f"u{int(u)}" for u in a[:, 11].tolist()]
    account = [
        f"q{int(q)}" if q >= 0 else (f"p{int(p)}" if p >= 0 else "")
        for q, p in zip(a[:, 14].tolist(), a[:, 15].tolist(), strict=True)
    ]
    ids, renamed = unique_ids(ids)
    raw = RawJobs(
        ids=ids,
        submit=a[:, 1].copy(),
        runtime=a[:, 3].copy(),
        gpus=np.maximum(procs, 0),
        limit=limit,
        user=user,
        account=account,
        partition=[DEFAULT_PARTITION] * len(ids),
        notes={"renamed_duplicate_ids": renamed},
    )
    return raw, header


def _header_int(header: dict[str, str], key: str, path: str) -> int | None:
    value = header.get(key)
    if value is None or value in {"", "-1"}:
        return None
    try:
        out = int(float(value.split()[0]))
    except (ValueError, OverflowError):  # OverflowError: inf
        raise InputFileError(path, None, f"header {key}: not a number ({value[:40]!r})") from None
    return out if out > 0 else None


def cluster_from_header(header: dict[str, str], path: str, largest_job: int) -> ClusterSpec:
    max_nodes = _header_int(header, "MaxNodes", path)
    max_procs = _header_int(header, "MaxProcs", path)
    if max_nodes and max_procs:
        count, ppn, note = max_nodes, max(max_procs // max_nodes, 1), "MaxNodes x MaxProcs/MaxNodes"
    elif max_procs or max_nodes:
        count, ppn, note = (
            (max_procs or max_nodes or 1),
            1,
            "one processor per node (header has one of MaxNodes/MaxProcs)",
        )
    else:
        count, ppn, note = max(largest_job, 1), 1, "no MaxNodes/MaxProcs header: sized to the largest job"
    # the nodes are built one by one: a corrupt header or job size must not ask for 10^12 of them
    if count > MAX_NODES or ppn > MAX_COUNT:
        raise InputFileError(
            path,
            None,
            f"the cluster would have {count:,} nodes of {ppn:,} processors ({note}); "
            f"at most {MAX_NODES:,} nodes of {MAX_COUNT:,}",
            "check the MaxNodes/MaxProcs header, or pass the cluster with --cluster",
        )
    nodes = tuple(
        NodeSpec(f"n{i:05d}", "", ppn, ppn, ppn * MEM_PER_PROC_MB, (DEFAULT_PARTITION,))
        for i in range(1, count + 1)
    )
    return ClusterSpec("swf", nodes, (PartitionSpec(DEFAULT_PARTITION),), resource="cpu", notes=note)


def load(ctx: LoadContext, text: str, path: str) -> Workload:
    raw, header = parse(text, path)
    known = raw.limit[np.isfinite(raw.limit)] if raw.limit is not None else np.zeros(0)
    header_max = _header_int(header, "MaxRuntime", path)
    default_cap = float(header_max) if header_max else (float(known.max()) if len(known) else ctx.default_cap)
    cap = ctx.opts.seconds("max_time", default_cap)
    ctx.opts.finish()
    cluster = ctx.cluster or cluster_from_header(header, path, int(raw.gpus.max()) if len(raw) else 1)
    meta = {"source": path, "format": "swf", "header": header, "cluster_note": cluster.notes}
    raw = ctx.partitions(raw, cluster)
    return assemble(
        "swf", cluster, raw, estimates=ctx.estimates(raw, path), seed=ctx.seed, cap=cap, meta=meta
    )
