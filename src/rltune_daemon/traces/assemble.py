"""From parsed or generated columns to a ``Workload``: the one place where the Workload invariants are
enforced for every trace (sorted, rebased submit times, unique ids, ``time_limit >= runtime``, jobs no
node could run dropped *and counted*).

Loaders produce a ``RawJobs`` (numpy columns, parsed completely before anything is built, so a
malformed file never yields a half-loaded workload) and call ``assemble``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64, I64
from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.jobs import Job
from rltune_daemon.domain.workload import EstimateModel, Workload
from rltune_daemon.errors import UserError
from rltune_daemon.traces import feasibility
from rltune_daemon.traces.estimates import DEFAULT_CAP, DEFAULT_MODEL, UserEstimateModel, estimate_limits


@dataclass
class RawJobs:
    """Columns of one trace before filtering. ``limit`` is the trace's requested time (NaN: unknown).

    ``submit`` may be absolute (epoch seconds); ``assemble`` rebases it to the first kept job.
    """

    ids: list[str]
    submit: F64
    runtime: F64
    gpus: I64
    limit: F64 | None = None
    nodes: I64 | None = None
    cpus: I64 | None = None
    mem_mb: I64 | None = None
    gpu_types: list[tuple[str, ...]] | None = None
    user: list[str] | None = None
    account: list[str] | None = None
    partition: list[str] | None = None
    qos: list[str] | None = None
    start: F64 | None = None
    """Absolute start times where the log has them (sacct): live QSSF history orders runs by end."""
    dropped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    """Counts that are not drops (steps skipped, ids renamed, GPUs rounded up); copied into ``meta``."""

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_limits(self) -> bool:
        return self.limit is not None and bool(np.any(np.isfinite(self.limit) & (self.limit > 0)))


def subset(raw: RawJobs, idx: I64) -> RawJobs:
    """The rows ``idx`` of ``raw`` (drop counts carried over)."""
    rows = idx.tolist()

    def pick(col: list[Any] | None) -> list[Any] | None:
        return None if col is None else [col[i] for i in rows]

    def take(col: Any) -> Any:
        return None if col is None else col[idx]

    return RawJobs(
        ids=[raw.ids[i] for i in rows],
        submit=raw.submit[idx],
        runtime=raw.runtime[idx],
        gpus=raw.gpus[idx],
        limit=take(raw.limit),
        nodes=take(raw.nodes),
        cpus=take(raw.cpus),
        mem_mb=take(raw.mem_mb),
        gpu_types=pick(raw.gpu_types),
        user=pick(raw.user),
        account=pick(raw.account),
        partition=pick(raw.partition),
        qos=pick(raw.qos),
        start=take(raw.start),
        dropped=dict(raw.dropped),
        notes=dict(raw.notes),
    )


def drop_cpu_only(raw: RawJobs, resource: str) -> RawJobs:
    """In a GPU trace, jobs without GPUs belong to another workload (a CPU partition): drop and count."""
    if resource == "cpu":
        return raw
    keep = raw.gpus > 0
    out = subset(raw, np.flatnonzero(keep))
    out.dropped["cpu_only"] = out.dropped.get("cpu_only", 0) + int(np.count_nonzero(~keep))
    return out


def unique_ids(ids: list[str]) -> tuple[list[str], int]:
    """Ids made unique by suffixing repeats with ``#2``, ``#3``... (logs list requeued jobs twice),
    skipping suffixed names that are ids of their own in the log: ``7, 7, 7#2`` gives ``7, 7#3, 7#2``,
    so that every id the log gives once stays that job's id and no two jobs share one."""
    taken = set(ids)
    used: set[str] = set()
    last: dict[str, int] = {}
    out: list[str] = []
    renamed = 0
    for jid in ids:
        new = jid
        if jid in used:
            renamed += 1
            k = last.get(jid, 1)
            while new in used or new in taken:
                k += 1
                new = f"{jid}#{k}"
            last[jid] = k
        used.add(new)
        out.append(new)
    return out, renamed


def _strs(col: list[str] | None, n: int) -> list[str]:
    return col if col is not None else [""] * n


def _ints(col: I64 | None, n: int) -> I64:
    return col if col is not None else np.zeros(n, dtype=np.int64)


def resolve_estimates(requested: str | None, raw_has_limits: bool, name: str) -> EstimateModel:
    """``None`` picks the file's own limits when it has them, else the user model."""
    if requested is None:
        return "trace" if raw_has_limits else "user"
    if requested == "trace" and not raw_has_limits:
        raise UserError(f"{name} records no requested time limits; use --estimates oracle or user")
    if requested == "trace":
        return "trace"
    if requested == "user":
        return "user"
    if requested == "oracle":
        return "oracle"
    raise UserError(f"unknown estimates model {requested!r} (choose oracle, user or trace)")


def assemble(
    name: str,
    cluster: ClusterSpec,
    raw: RawJobs,
    *,
    estimates: EstimateModel,
    seed: int,
    cap: float = DEFAULT_CAP,
    params: UserEstimateModel = DEFAULT_MODEL,
    meta: dict[str, Any] | None = None,
) -> Workload:
    """Filter, sort, rebase, set limits and build the ``Workload`` (see module docstring)."""
    n = len(raw)
    dropped = dict(raw.dropped)
    gpus = raw.gpus.astype(np.int64)
    nodes, cpus, mem = _ints(raw.nodes, n), _ints(raw.cpus, n), _ints(raw.mem_mb, n)
    types: list[tuple[str, ...]] = raw.gpu_types if raw.gpu_types is not None else [()] * n
    known_parts = set(cluster.partition_names)
    parts = _strs(raw.partition, n)
    remapped = sum(1 for p in parts if p and p not in known_parts)
    if remapped:
        parts = [p if p in known_parts else "" for p in parts]

    good_runtime = np.isfinite(raw.runtime) & (raw.runtime > 0) & np.isfinite(raw.submit)
    asks = (gpus > 0) | (cpus > 0)
    verdict = feasibility.check(cluster, gpus, nodes, cpus, mem, types, parts)
    keep = good_runtime & asks & verdict.ok
    _count(dropped, "runtime_not_positive", int(np.count_nonzero(~good_runtime)))
    _count(dropped, "no_resources", int(np.count_nonzero(good_runtime & ~asks)))
    good_runtime &= asks
    _count(dropped, "unknown_gpu_type", int(np.count_nonzero(good_runtime & verdict.unknown_type)))
    _count(dropped, "infeasible", int(np.count_nonzero(good_runtime & ~verdict.ok & ~verdict.unknown_type)))

    idx = np.flatnonzero(keep)
    idx = idx[np.argsort(raw.submit[idx], kind="stable")]
    submit = raw.submit[idx]
    origin = float(submit[0]) if len(submit) else 0.0
    submit = submit - origin
    runtime = raw.runtime[idx]
    trace_limits = raw.limit[idx] if raw.limit is not None else None
    limits, est_counts = estimate_limits(runtime, estimates, seed, cap, trace_limits, params)

    ids = [raw.ids[i] for i in idx.tolist()]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{name}: job ids are not unique")
    user, account, qos = _strs(raw.user, n), _strs(raw.account, n), _strs(raw.qos, n)
    jobs = tuple(
        Job(ids[r], s, g, lim, runtime=rt, gpu_types=types[i], nodes=nd, cpus=c, mem_mb=m, user=user[i],
            account=account[i], partition=parts[i], qos=qos[i])
        for r, (i, s, rt, lim, g, nd, c, m) in enumerate(
            zip(
                idx.tolist(),
                submit.tolist(),
                runtime.tolist(),
                limits.tolist(),
                gpus[idx].tolist(),
                nodes[idx].tolist(),
                cpus[idx].tolist(),
                mem[idx].tolist(),
                strict=True,
            )
        )
    )
    info: dict[str, Any] = dict(meta or {})
    info.update(raw.notes)
    info.update(
        {
            "seed": seed,
            "origin": origin,
            "rows": n,
            "dropped": {k: v for k, v in dropped.items() if v},
            "estimates": {"model": estimates, "cap_s": None if estimates == "oracle" else cap, **est_counts},
        }
    )
    if remapped:
        info["partition_remapped"] = remapped
    return Workload(name, cluster, jobs, estimates, info)


def _count(d: dict[str, int], key: str, value: int) -> None:
    if value:
        d[key] = d.get(key, 0) + value
