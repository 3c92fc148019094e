"""A site's history as the simulator's workload, with each job's recorded start kept beside it.

A month of a real cluster's accounting holds lines no loader should die on: a name with a '|' in it,
a truncated last line, jobs that never started or still run, array tasks, heterogeneous components,
jobs in partitions or on GPU types since removed. Each bad line is skipped with one line naming it
(the first few are shown, all are counted), never a traceback, and every job that could not be
simulated is counted by reason: those counts are the self-check's "could not place" share.

The jobs keep their recorded time limits (``estimates = "trace"``: backfill plans with what users
asked for) and their own partitions; the cluster is the site's ``scontrol show node`` and
``partition`` (tiers and PriorityJobFactor included).

Slurm starts the next job a moment after the one before it on those resources ended: the end is
reported, the resources released and the next scheduler run comes on its 1-s clock. The history
shows this delay as the gap between an end and the next start; its mean over the older part
(``release_latency``, 0.4 to 0.8 s on the local 22.05 cluster) is added to every job's run time, so
that the simulated resources stay busy as long as Slurm's did. On jobs of hours it changes nothing; on
jobs of seconds it is much of the difference between the simulated and the recorded waits.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64
from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError, UserError
from rltune_daemon.site.exports import Exports
from rltune_daemon.traces import sacct
from rltune_daemon.traces.assemble import RawJobs, assemble, drop_cpu_only
from rltune_daemon.traces.clusterfile import parse_scontrol

SHOWN_PROBLEMS = 5  # bad lines printed one by one; the rest are counted
LATENCY_MAX_S = 10.0  # a longer gap is the cluster idling, not Slurm's own delay
OLDER_SHARE = 0.7  # the part of the history the delay is measured on (the recent part is judged)


@dataclass
class History:
    """The jobs that ran (``workload``, submit order, seconds from the first submit), their recorded
    starts on the same clock, and what was left out, by reason."""

    workload: Workload
    recorded_start: F64
    release_latency: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def unplaceable(self) -> int:
        """Jobs that ran on the cluster but that its current nodes cannot run in the simulator."""
        dropped = self.workload.meta.get("dropped", {})
        return int(sum(dropped.get(k, 0) for k in ("unknown_gpu_type", "infeasible")))


def read_cluster(exports: Exports) -> ClusterSpec:
    text = exports.nodes.rstrip("\n") + "\n" + exports.partitions
    try:
        return parse_scontrol(text, "nodes.txt + partitions.txt", "site")
    except InputFileError as exc:
        raise UserError(f"{exc} (save nodes.txt with `scontrol -o show node`, partitions.txt with "
                        "`scontrol -o show partition`)") from None


def parse_lenient(text: str, path: str) -> tuple[RawJobs, str, list[str], Counter[str]]:
    """``traces.sacct``'s jobs, but a bad line is skipped and reported instead of ending the read."""
    problems: list[str] = []
    raw, resource = sacct.parse(text, path, on_bad=lambda exc: problems.append(str(exc)))
    if not len(raw):
        raise UserError(f"{path}: no job that ran in the history ({sum(raw.dropped.values())} jobs that "
                        "never started or still run); widen --days")
    counts: Counter[str] = Counter(bad_line=len(problems))
    counts["het_component"] = sum("+" in i for i in raw.ids)  # each simulated as a job of its own
    counts["array_task"] = sum("_" in i for i in raw.ids)
    return raw, resource, problems, counts


def json_to_sacct(text: str, path: str) -> str:
    """``sacct --json`` (Slurm 22.05's and later data parsers) as the ``-P`` text the reader takes."""
    try:
        jobs = json.loads(text).get("jobs", [])
    except (json.JSONDecodeError, AttributeError):
        raise UserError(f"{path}: not readable JSON (truncated?); export with sacct -P instead") from None
    header = "JobID|User|Account|Partition|QOS|Submit|Start|End|ReqTRES|Timelimit"
    lines = [header]
    for job in jobs if isinstance(jobs, list) else []:
        if not isinstance(job, dict):
            continue
        t = job.get("time") or {}
        jid = str(job.get("job_id", ""))
        array = job.get("array") or {}
        task = _number(array.get("task_id"))
        if task is not None and _number(array.get("job_id")):
            jid = f"{_number(array.get('job_id'))}_{task}"
        tres = (job.get("tres") or {}).get("requested") or []
        req = ",".join(f"{x.get('type')}{'/' + x['name'] if x.get('name') else ''}={_number(x.get('count'))}"
                       for x in tres if isinstance(x, dict))
        limit = _number(t.get("limit"))
        cells = [jid, str(job.get("user", "")), str(job.get("account", "")), str(job.get("partition", "")),
                 str(job.get("qos", "")), _stamp(t.get("submission")), _stamp(t.get("start")),
                 _stamp(t.get("end")), req, "UNLIMITED" if limit is None else str(limit)]
        lines.append("|".join(c.replace("|", " ") for c in cells))
    return "\n".join(lines) + "\n"


def _number(value: Any) -> int | None:
    """A JSON number as Slurm writes it: plain (22.05) or ``{"set": .., "infinite": .., "number": ..}``."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _stamp(value: Any) -> str:
    n = _number(value)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(n)) if n else "Unknown"


def load_history(exports: Exports, seed: int = 0) -> History:
    """The site's jobs on the site's cluster (module docstring)."""
    cluster = read_cluster(exports)
    text = exports.sacct
    if text.lstrip().startswith("{"):
        text = json_to_sacct(text, "sacct.txt")
    raw, resource, problems, counts = parse_lenient(text, "sacct.txt")
    if resource != cluster.resource:
        raise UserError(f"sacct.txt has {'no' if resource == 'cpu' else ''} GPU jobs but the cluster's "
                        f"nodes have {'GPUs' if cluster.resource == 'gpu' else 'none'}: are the files of one "
                        "cluster?")
    raw = drop_cpu_only(raw, resource)
    parts = [p if p in cluster.partition_names else "" for p in (raw.partition or [""] * len(raw))]
    gone = sum(1 for p, q in zip(parts, raw.partition or [], strict=False) if q and not p)
    if gone:
        counts["partition_removed"] = gone  # run in the default partition, which is listed first
    parts = [p or cluster.partition_names[0] for p in parts]
    raw = dataclasses.replace(raw, partition=parts)
    starts = dict(zip(raw.ids, (raw.start if raw.start is not None else raw.submit).tolist(), strict=True))
    limits = raw.limit[np.isfinite(raw.limit) & (raw.limit > 0)] if raw.limit is not None else np.zeros(0)
    cap = float(limits.max()) if len(limits) else 7 * 86400.0
    wl = assemble("site", cluster, raw, estimates="trace", seed=seed, cap=cap,
                  meta={"source": exports.source, "format": "sacct", "resource": resource})
    origin = float(wl.meta["origin"])
    recorded = np.array([starts[j.id] - origin for j in wl.jobs], dtype=np.float64)
    latency = release_latency(recorded, np.array([j.runtime or 0.0 for j in wl.jobs]))
    if latency > 0:
        held = [(j.runtime or 0.0) + latency for j in wl.jobs]
        wl = wl.with_jobs(tuple(dataclasses.replace(j, runtime=r, time_limit=max(j.time_limit, r))
                                for j, r in zip(wl.jobs, held, strict=True)))
    skipped = {"never_started": raw.dropped.get("never_started", 0),
               "still_running": raw.dropped.get("still_running", 0),
               **{k: int(v) for k, v in wl.meta.get("dropped", {}).items()
                  if k not in ("never_started", "still_running")},
               **dict(counts)}
    notes = [f"{n} {what}" for what, n in (("lines could not be read", counts["bad_line"]),
                                            ("array tasks, each simulated as a job", counts["array_task"]),
                                            ("heterogeneous-job components, each simulated as a job",
                                             counts["het_component"]),
                                            ("jobs in partitions since removed, run in the default one",
                                             counts["partition_removed"])) if n]
    return History(wl, recorded, latency, {k: v for k, v in skipped.items() if v}, problems, notes)


def release_latency(start: F64, runtime: F64) -> float:
    """The median gap between a start and the latest end before it, over the older part's starts that
    follow an end by at most ``LATENCY_MAX_S`` (module docstring); 0 when none does."""
    ends = np.sort(start + runtime)
    older = np.unique(start[: max(1, int(len(start) * OLDER_SHARE))])
    at = np.searchsorted(ends, older, side="right")  # the ends at or before each start
    gaps = older[at > 0] - ends[at[at > 0] - 1]
    gaps = gaps[gaps <= LATENCY_MAX_S]
    return float(np.mean(gaps)) if len(gaps) else 0.0
