"""Turn parsed Slurm records into a domain ``Snapshot`` (pure; shared by the CLI and pyslurm readers).

Conventions, each forced by how Slurm 22.05 behaves:

* Job ids are RAW ids (squeue ``%A``): the id ``sprio`` prints and ``scontrol update JobId=`` takes
  for exactly that record (FACTS a). A pending array whose tasks were never split is ONE record whose
  raw id equals the array id (``12_[0-3]`` -> ``12``); updating that id updates every task of the
  array, split ones included, so it is marked by ``PendingState.array_job_id == job id``. A task that
  was split off (by an update or a start) has its own raw id and ``array_job_id`` = the array id.
* ``Job.gpus``/``cpus``/``mem_mb`` are job totals (for an unsplit array: per task). GPUs come from
  tres-per-node x nodes, else tres-per-job (``--gpus``), else tres-per-task x tasks; CPUs and memory
  from ``tres-alloc`` (``%m`` is per CPU or per node with no way to tell, FACTS e).
* ``time_limit`` UNLIMITED becomes the partition's MaxTime when finite, else ``unlimited_s`` (365 days:
  Slurm itself plans an unlimited job as running one year; a started job with no limit in a
  MaxTime=INFINITE partition shows ``365-00:00:00``).
* Running jobs' per-node allocation: GPUs from tres-per-node, or per-job GPUs split evenly over the
  node list; CPUs and memory split evenly. Exact per-node data needs ``scontrol -d show job`` (free
  text, 40 ms per 1000 jobs); node totals come from sinfo anyway, which is exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from rltune_daemon.domain import (
    DEFAULT_PARTITION,
    Job,
    NodeAlloc,
    NodeState,
    PartitionSpec,
    PendingState,
    RunningJob,
    Snapshot,
)
from rltune_daemon.domain.updates import ReadInfo
from rltune_daemon.formats.slurm import compress_hostlist, expand_hostlist, parse_memory_mb
from rltune_daemon.slurm.memo import Memo
from rltune_daemon.slurm.parse import (
    JobRecord,
    NodeRecord,
    PrioRecord,
    TresRecord,
    gpus_in_spec,
    node_usable,
)

UNLIMITED_DEFAULT_S = 365 * 86400.0




def queue_signature(records: Iterable[JobRecord]) -> frozenset[tuple[str, str]]:
    """What the daemon's queue watch compares: a job arrived, started or ended (or changed state) when
    this set changes. SiteFactor and node-list updates leave it alone, so the daemon's own writes do
    not trigger cycles; the jobs Slurm starts after them do."""
    return frozenset((r.job_id, r.state) for r in records)


def request_gpus(rec: JobRecord, tres: TresRecord | None,
                 spec_gpus: Callable[[str], tuple[int, str]] = gpus_in_spec) -> tuple[int, str]:
    """Total GPUs and the GPU type a job asks for (see module docstring); ``spec_gpus``: ``gpus_in_spec``
    or a memo of it."""
    per_node, ptype = spec_gpus(rec.tres_per_node)
    if per_node:
        return per_node * max(rec.nodes, 1), ptype
    if tres is not None:
        per_job, jtype = spec_gpus(tres.tres_per_job)
        if per_job:
            return per_job, jtype
        per_task, ttype = spec_gpus(tres.tres_per_task)
        if per_task:
            return per_task * max(tres.num_tasks, 1), ttype
    return 0, ""


def _time_limit(rec: JobRecord, max_time: Mapping[str, float], unlimited_s: float) -> float:
    if math.isfinite(rec.time_limit) and rec.time_limit > 0:
        return rec.time_limit
    part_max = max_time.get(rec.partitions[0], math.inf) if rec.partitions else math.inf
    return part_max if math.isfinite(part_max) and part_max > 0 else unlimited_s


class _Parsers:
    """Memos of the value parsers for one Snapshot (GRES specs and memory sizes repeat across jobs)."""

    def __init__(self) -> None:
        self.gpus = Memo(gpus_in_spec)
        self.memory = Memo(parse_memory_mb)


def _job(rec: JobRecord, tres: TresRecord | None, limit: float, parsers: _Parsers | None = None) -> Job:
    memo = parsers or _Parsers()
    gpus, gtype = request_gpus(rec, tres, memo.gpus)
    cpus, mem = rec.cpus, None
    if tres is not None:  # what TresRecord.cpus and .mem_mb give, through the memo
        v = tres.alloc.get("cpu")
        if v:
            cpus = int(v)
        v = tres.alloc.get("mem")
        mem = memo.memory(v) if v else None
    if mem is None:  # %m is per CPU or per node (FACTS e): a per-node guess
        mem = rec.min_memory_mb * max(rec.nodes, 1)
    if rec.submit is None:
        raise ValueError("no submit time")
    return Job(
        id=rec.job_id, submit=rec.submit, gpus=gpus, time_limit=limit,
        gpu_types=(gtype,) if gtype else (), nodes=rec.nodes, cpus=cpus, mem_mb=mem,
        user=rec.user, account=rec.account, partition=rec.partitions[0] if rec.partitions else "",
        qos=rec.qos,
    )


def _split(total: int, k: int) -> list[int]:
    base, extra = divmod(total, k)
    return [base + (1 if i < extra else 0) for i in range(k)]


def _allocation(rec: JobRecord, job: Job, spec_gpus: Callable[[str], tuple[int, str]] = gpus_in_spec
                ) -> tuple[NodeAlloc, ...]:
    names = expand_hostlist(rec.node_list)
    if not names:
        return ()
    k = len(names)
    per_node, _ = spec_gpus(rec.tres_per_node)
    gpus = [per_node] * k if per_node else _split(job.gpus, k)
    cpus, mem = _split(job.cpus, k), _split(job.mem_mb, k)
    return tuple(NodeAlloc(n, g, c, m) for n, g, c, m in zip(names, gpus, cpus, mem, strict=True))


def _pending_state(rec: JobRecord, prio: Sequence[PrioRecord]) -> PendingState:
    row = None  # the sprio row of the job's first partition, else its first row
    if rec.partitions:
        first = rec.partitions[0]
        for p in prio:
            if p.partition == first:
                row = p
                break
    if row is None and prio:
        row = prio[0]
    return PendingState(
        priority=rec.priority,
        site_factor=row.site_factor if row is not None else 0,
        reason=rec.reason,
        nice=rec.nice,
        req_nodes=rec.req_nodes,
        exc_nodes=rec.exc_nodes,
        oversubscribe=rec.oversubscribe,
        admin_priority=row.admin_set() if row is not None else False,
        held=rec.priority == 0 or rec.reason.startswith("JobHeld"),
        array_job_id=rec.array_job_id,
    )


def merge_nodes(rows: Iterable[NodeRecord]) -> tuple[list[NodeState], list[PartitionSpec], dict[str, float]]:
    """Nodes (one per name, partitions merged), partitions and their MaxTime from sinfo -N rows."""
    nodes: dict[str, NodeRecord] = {}
    parts: dict[str, list[str]] = {}
    specs: dict[str, PartitionSpec] = {}
    max_time: dict[str, float] = {}
    for r in rows:
        nodes.setdefault(r.name, r)
        if r.partition:
            plist = parts.setdefault(r.name, [])
            if r.partition not in plist:
                plist.append(r.partition)
            specs.setdefault(r.partition, PartitionSpec(r.partition, r.priority_tier, r.priority_job_factor))
            max_time.setdefault(r.partition, r.max_time)
    states = [
        NodeState(
            name=r.name, gpu_type=r.gpu_type, gpus=r.gpus, gpus_alloc=r.gpus_alloc, cpus=r.cpus,
            cpus_alloc=r.cpus_alloc, mem_mb=r.mem_mb, mem_alloc_mb=r.mem_alloc_mb,
            partitions=tuple(sorted(parts.get(r.name, []))), state=r.state, usable=node_usable(r.state),
        )
        for r in nodes.values()
    ]
    return states, sorted(specs.values(), key=lambda p: p.name), max_time


def _queue_key(rec: JobRecord) -> tuple[int, int]:
    """(job id, task id) as slurmctld orders jobs of equal priority and submit time: an array task by
    its array's job id; an id that is not a number (never seen from Slurm) sorts last, in read order."""
    job = rec.array_job_id or rec.job_id
    task = rec.array_task if rec.array_job_id else ""
    return (int(job) if job.isdigit() else _LAST, int(task) if task.isdigit() else -1)


_LAST = 2**63


def build_snapshot(
    clock: float,
    jobs: Sequence[JobRecord],
    tres: Mapping[str, TresRecord],
    prio: Mapping[str, Sequence[PrioRecord]],
    node_rows: Sequence[NodeRecord],
    *,
    unlimited_s: float = UNLIMITED_DEFAULT_S,
    source: str = "slurm",
    require_tres: bool = True,
) -> tuple[Snapshot, ReadInfo]:
    """Assemble a Snapshot. Pending jobs missing from the tres output (they changed state between the
    two squeue calls) are skipped when ``require_tres``; running ones fall back to ``%b``/``%m``."""
    info = ReadInfo()
    nodes, partitions, max_time = merge_nodes(node_rows)
    pending: list[Job] = []
    pstate: list[PendingState] = []
    order: list[tuple[int, int]] = []  # Slurm's tie-break of each pending job (_queue_key)
    running: list[RunningJob] = []
    unknown: set[str] = set()
    tasks: dict[str, list[str]] = {}
    parsers = _Parsers()
    for rec in jobs:
        if rec.job_id in tasks:  # further tasks of an unsplit pending array (squeue -r)
            tasks[rec.job_id].append(rec.array_task)
            continue
        tasks[rec.job_id] = [rec.array_task]
        t = tres.get(rec.job_id)
        try:
            job = _job(rec, t, _time_limit(rec, max_time, unlimited_s), parsers)
        except ValueError as exc:
            info.skipped.append((rec.job_id, str(exc)))
            continue
        if rec.array_job_id:
            info.display_ids[rec.job_id] = f"{rec.array_job_id}_{rec.array_task}"
        if rec.state == "PENDING":
            if t is None and require_tres:
                info.skipped.append((rec.job_id, "left the queue between the two squeue calls"))
                continue
            rows = prio.get(rec.job_id, ())
            if not rows:
                unknown.add(rec.job_id)
            pending.append(job)
            pstate.append(_pending_state(rec, rows))
            order.append(_queue_key(rec))
        elif rec.state == "RUNNING":
            start = rec.start if rec.start is not None else clock
            alloc = _allocation(rec, job, parsers.gpus)
            running.append(RunningJob(job, start, start + job.time_limit, alloc))
    for job_id, ids in tasks.items():
        if len(ids) > 1 and job_id in info.display_ids:
            info.array_tasks[job_id] = len(ids)
            info.display_ids[job_id] = f"{job_id}_{compress_hostlist(ids)}"
    info.site_factor_unknown = frozenset(unknown)
    # in Slurm's tie order: the planner breaks ties of priority and submit time by row, as slurmctld
    # breaks them by job id (an array's tasks by array job id, then task id); squeue lists in its own order
    by_id = sorted(range(len(pending)), key=order.__getitem__)
    pending, pstate = [pending[k] for k in by_id], [pstate[k] for k in by_id]
    snap = Snapshot(
        clock=clock, pending=tuple(pending), pending_state=tuple(pstate), running=tuple(running),
        nodes=tuple(nodes), partitions=tuple(partitions) or (PartitionSpec(DEFAULT_PARTITION),),
        source=source,
    )
    return snap, info
