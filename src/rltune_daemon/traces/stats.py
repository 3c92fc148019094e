"""Summary statistics of a workload: what ``rltune trace stats`` prints and the docs tabulate.

Offered load = GPU-seconds the jobs demand / GPU-seconds the cluster offers over the submit span; it
is the first thing to check when a trace shows no queueing (too low) or endless queues (> 1).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from rltune_daemon.domain.workload import Workload
from rltune_daemon.formats.slurm import short_duration

PERCENTILES = (10, 50, 90, 99)


def _summary(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {}
    out = {f"p{p}": float(np.percentile(values, p)) for p in PERCENTILES}
    out["mean"] = float(values.mean())
    out["max"] = float(values.max())
    return out


def _mix(counter: Counter[str], total: int) -> dict[str, dict[str, float]]:
    return {k: {"jobs": v, "pct": round(100.0 * v / total, 2)} for k, v in counter.items()}


MODEL_TEXT = {
    "oracle": "oracle: time limit = runtime",
    "user": "user: modelled requests",
    "trace": "trace: the trace's own requested times",
}


def estimates_note(workload: Workload) -> str:
    """Which requested-time model ran and why, in one line: the limits are what every policy and the
    backfill see, and a file without requested times gets the user model unless told otherwise."""
    info = workload.meta.get("estimates", {})
    parts = [MODEL_TEXT.get(workload.estimates, workload.estimates)]
    if info.get("chosen") == "default":
        parts.append("the default, as the trace records no requested times" if workload.estimates == "user"
                     else "the default where a trace records them")
    if info.get("filled_by_user_model"):
        parts.append(f"{info['filled_by_user_model']:,} unknown filled by the user model")
    if info.get("raised_to_runtime"):
        parts.append(f"{info['raised_to_runtime']:,} raised to the runtime")
    return "; ".join(parts)


def dropped_note(dropped: dict[str, int], kept: int) -> str:
    """The jobs dropped at load by reason, out of all the trace held: ``none`` or ``3 of 1,027 jobs:
    infeasible 3``. Every job is dropped for one reason only, so kept + dropped is what was read."""
    if not dropped:
        return "none"
    total = sum(dropped.values())
    reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(dropped.items()))
    return f"{total:,} of {kept + total:,} jobs: {reasons}"


def trace_stats(workload: Workload) -> dict[str, Any]:
    """Jobs, span, arrival rate, GPU-size/type mix, runtime and time-limit percentiles, cluster."""
    jobs = workload.jobs
    n = len(jobs)
    submit = np.fromiter((j.submit for j in jobs), dtype=np.float64, count=n)
    runtime = np.fromiter((j.runtime or 0.0 for j in jobs), dtype=np.float64, count=n)
    limit = np.fromiter((j.time_limit for j in jobs), dtype=np.float64, count=n)
    gpus = np.fromiter((j.gpus for j in jobs), dtype=np.int64, count=n)
    span = float(submit[-1] - submit[0]) if n > 1 else 0.0
    cl = workload.cluster
    sizes = Counter(str(g) for g in sorted(gpus.tolist()))
    types = Counter("|".join(j.gpu_types) or "any" for j in jobs)
    ratio = limit / np.maximum(runtime, 1e-9)
    return {
        "name": workload.name,
        "jobs": n,
        "span_days": span / 86400.0,
        "arrival_rate_per_s": (n - 1) / span if span else 0.0,
        "arrival_rate_per_hour": 3600.0 * (n - 1) / span if span else 0.0,
        "gpu_sizes": _mix(sizes, n),
        "runtime_s": _summary(runtime),
        "time_limit_s": _summary(limit),
        "limit_over_runtime_median": float(np.median(ratio)) if n else 0.0,
        "gpu_types": _mix(types, n),
        "users": len({j.user for j in jobs}),
        "accounts": len({j.account for j in jobs}),
        "offered_load": float((gpus * runtime).sum() / (cl.total_gpus * span))
        if span and cl.total_gpus
        else 0.0,
        "estimates": workload.estimates,
        "estimates_note": estimates_note(workload),
        "dropped": dict(workload.meta.get("dropped", {})),
        "partition_remapped": int(workload.meta.get("partition_remapped", 0)),
        "cluster": {
            "name": cl.name,
            "describe": cl.describe(),
            "nodes": len(cl.nodes),
            "total_gpus": cl.total_gpus,
            "resource": cl.resource,
            "partitions": list(cl.partition_names),
            "gpu_types": {
                t or "cpu": sum(nd.gpus for nd in cl.nodes if nd.gpu_type == t) for t in cl.gpu_types
            },
        },
    }


def format_stats(s: dict[str, Any]) -> str:
    """Human-readable rendering of ``trace_stats``."""
    unit = "GPUs" if s["cluster"]["resource"] == "gpu" else "processors"
    out = [
        f"trace        {s['name']}  (estimates: {s['estimates']})",
        f"jobs         {s['jobs']}",
        f"dropped      {dropped_note(s['dropped'], s['jobs'])}",
        f"time limits  {s['estimates_note']}",
        f"span         {s['span_days']:.2f} days",
        f"arrivals     {s['arrival_rate_per_hour']:.2f} jobs/h ({s['arrival_rate_per_s']:.6f} jobs/s)",
        f"offered load {s['offered_load']:.3f} of {s['cluster']['total_gpus']} {unit}",
        f"users        {s['users']} users, {s['accounts']} accounts",
    ]
    for key, label in (("runtime_s", "runtime"), ("time_limit_s", "time limit")):
        q = s[key]
        if q:
            keys = ("p10", "p50", "p90", "p99", "mean", "max")
            cells = "  ".join(f"{k} {short_duration(q[k], 1)}" for k in keys)
            out.append(f"{label:<12} {cells}")
    out.append(f"limit/run    median {s['limit_over_runtime_median']:.2f}x")
    out.append(f"{unit} per job (jobs, %):")
    out += [f"  {k:>6}  {v['jobs']:>7}  {v['pct']:6.2f}" for k, v in s["gpu_sizes"].items()]
    out.append("GPU types requested (jobs, %):")
    out += [f"  {k:>16}  {v['jobs']:>7}  {v['pct']:6.2f}" for k, v in sorted(s["gpu_types"].items())]
    c = s["cluster"]
    out.append(
        f"cluster      {c['name']}: {c['nodes']} nodes, {c['total_gpus']} {unit}, "
        f"partitions {', '.join(c['partitions'])}"
    )
    out.append(f"             {c['describe']}")
    if s["partition_remapped"]:
        out.append(f"remapped     {s['partition_remapped']:,} jobs name a partition the cluster lacks: "
                   f"run in its first, {c['partitions'][0]}")
    return "\n".join(out)
