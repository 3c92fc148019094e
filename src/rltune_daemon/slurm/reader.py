"""Read a ``Snapshot`` from Slurm with the fewest, cheapest client calls, and only when it is whole.

One cycle = 5 calls (``--json`` is 7x slower in 22.05 and ignores filters, FACTS e): ``scontrol ping``
(skip the cycle at once when slurmctld is down, FACTS g), ``sprio`` (site factor + factors; read first,
so it can vouch for the queue read after it, see ``integrity``), ``squeue -o`` (pending + running
jobs, one line per array task, free text framed by width, see ``parse``), ``squeue -O`` (per-job/per-
task GPU requests and total CPUs/memory, which ``-o`` cannot print), ``sinfo -N -O`` (nodes, GRES in
use, state, and each partition's PriorityTier/PriorityJobFactor/MaxTime). A queue check between
cycles (``watch``) is one ``squeue -o '%A|%T|'``; ``confirm`` asks what became of jobs a read did not
list. Anything incomplete or inconsistent raises ``SuspectRead`` before a Snapshot exists.

With ``concurrent`` (the daemon's setting) the two squeue calls and sinfo run at once once sprio has
answered, each output parsed in its thread as soon as it is in: the read takes sprio plus the slowest of
the three instead of the sum, and slurmctld serves the three under one stretch of its job read lock.
The checks are the same: the calls were never taken at one instant, and what changes in between (jobs
ending, or arriving between the two squeue calls) is the churn their tolerances allow. Their call budget
and RPC tokens are taken in order before any of them starts (``SlurmRunner.reserve``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Protocol, runtime_checkable

from rltune_daemon.domain import Snapshot, job_order
from rltune_daemon.domain.updates import Fate, ReadInfo
from rltune_daemon.gcpause import paused_gc
from rltune_daemon.slurm.assemble import UNLIMITED_DEFAULT_S, build_snapshot
from rltune_daemon.slurm.errors import ControllerDown, SlurmError, SuspectRead
from rltune_daemon.slurm.integrity import (
    ReadLimits,
    check_drop,
    check_sprio,
    check_sprio_covers,
    check_tres,
    fate_of,
    vanished_sample,
)
from rltune_daemon.slurm.parse import (
    JOB_STATE_FORMAT,
    SINFO_NODE_FORMAT,
    SPRIO_FORMAT,
    SQUEUE_JOB_FORMAT,
    SQUEUE_TRES_FORMAT,
    JobRecord,
    NodeRecord,
    Parsed,
    PrioRecord,
    TresRecord,
    parse_job_states,
    parse_sinfo_nodes,
    parse_sprio,
    parse_squeue_jobs,
    parse_squeue_tres,
)
from rltune_daemon.slurm.runner import SlurmRunner, classify

# squeue -j with ONE id asks for that job alone and says so when Slurm no longer knows it; with
# several ids it lists the known ones and is silent about the rest (seen on 22.05)
INVALID_JOB = "Invalid job id specified"
CONFIRM_BATCH = 500
# sprio lists every pending job that is eligible (not held, no unmet dependency, past --begin); a job that
# became eligible this long before sprio ran is surely there (FACTS a: up to ~1 s after a release)
SETTLE_S = 5.0

@runtime_checkable
class SnapshotReader(Protocol):
    """What the service needs from a backend: a Snapshot per call, plus details of the last read."""

    @property
    def last(self) -> ReadInfo | None: ...

    def read(self) -> Snapshot: ...


def _parts(partitions: Sequence[str]) -> list[str]:
    return ["-p", ",".join(partitions)] if partitions else []


def squeue_jobs_argv(partitions: Sequence[str] = ()) -> list[str]:
    """``-r``: one line per array task. Without it squeue folds tasks that were split off (own raw id,
    own priority) into the ``A_[...]`` line of the array and hides their ids (seen on 22.05)."""
    return ["squeue", "-h", "-a", "-r", "-t", "PD,R", "-o", SQUEUE_JOB_FORMAT, *_parts(partitions)]


def squeue_tres_argv(partitions: Sequence[str] = ()) -> list[str]:
    return ["squeue", "-h", "-a", "-r", "-t", "PD,R", "-O", SQUEUE_TRES_FORMAT, *_parts(partitions)]


def queue_argv(partitions: Sequence[str] = ()) -> list[str]:
    """The queue check: ids and states of the same jobs ``squeue_jobs_argv`` lists."""
    return ["squeue", "-h", "-a", "-r", "-t", "PD,R", "-o", JOB_STATE_FORMAT, *_parts(partitions)]


def confirm_argv(job_ids: Sequence[str]) -> list[str]:
    """Every state (finished jobs too, while slurmctld keeps them: MinJobAge) of the given ids."""
    return ["squeue", "-h", "-a", "-r", "-t", "all", "-j", ",".join(job_ids), "-o", JOB_STATE_FORMAT]


def sprio_argv(partitions: Sequence[str] = ()) -> list[str]:
    return ["sprio", "-h", "-o", SPRIO_FORMAT, *_parts(partitions)]


def sinfo_argv(partitions: Sequence[str] = ()) -> list[str]:
    """``-a`` (hidden partitions too) only without ``-p``: sinfo refuses both ("Conflicting options");
    named partitions are listed whether hidden or not."""
    return ["sinfo", "-h", "-N", "-O", SINFO_NODE_FORMAT, *(_parts(partitions) or ["-a"])]


# Which read commands run at once with ``concurrent``: sprio first on its own (every job it lists was
# pending before the queue was read, so it can vouch for the squeue output: ``integrity``), then the two
# squeue calls and sinfo together.
CONCURRENT_GROUPS: tuple[tuple[str, ...], ...] = (("sprio",), ("squeue -o", "squeue -O", "sinfo"))


def _run_parse(runner: SlurmRunner, argv: Sequence[str], encoding: str, parse: Callable[[str], Any]) -> Any:
    """One reserved read command and its parsed output (run in a thread of the read's pool)."""
    return parse(runner.run(argv, encoding=encoding, reserved=True).stdout)


class SlurmReader:
    """CLI backend. ``read()`` starts a new call-budget cycle on the runner (the writer's calls of the
    same cycle count after it) and raises ``ControllerDown``/``CommandTimeout``/``ParseError``/
    ``SuspectRead``..."""

    def __init__(
        self,
        runner: SlurmRunner,
        *,
        partitions: Sequence[str] = (),
        ping_first: bool = True,
        unlimited_s: float = UNLIMITED_DEFAULT_S,
        limits: ReadLimits | None = None,
        single_checks: int = 3,
        wall: Callable[[], float] = time.time,
        concurrent: bool = False,
    ) -> None:
        self.runner = runner
        self.partitions = tuple(partitions)
        self.ping_first = ping_first
        self.unlimited_s = unlimited_s
        self.limits = limits or ReadLimits()
        self.single_checks = single_checks
        self.wall = wall  # the clock a Snapshot is stamped with (epoch seconds)
        self.concurrent = concurrent  # run the read commands of CONCURRENT_GROUPS at once
        self._last: ReadInfo | None = None
        self._previous: frozenset[str] | None = None  # jobs the previous framed read listed
        self._nodes: int = 0

    @property
    def last(self) -> ReadInfo | None:
        return self._last

    def read(self) -> Snapshot:
        with paused_gc():
            return self._read()

    def _read(self) -> Snapshot:
        t0 = time.monotonic()
        self.runner.begin_cycle()
        if self.ping_first and not self.runner.ping():
            raise ControllerDown("slurmctld unreachable (scontrol ping: DOWN); cycle skipped")
        clock = self.wall()  # also when sprio ran: the first call after the ping
        parts = self.partitions
        prio, jobs, tres, nodes = self._outputs(parts)
        listed = frozenset(j for j, _ in jobs.listed)
        previous, self._previous = self._previous, listed
        self._check(clock, prio.records, jobs.listed, tres.records, nodes.records, previous)
        by_job: dict[str, list[PrioRecord]] = {}
        for p in prio.records:
            by_job.setdefault(p.job_id, []).append(p)
        snap, info = build_snapshot(
            clock, jobs.records, {t.job_id: t for t in tres.records}, by_job, nodes.records,
            unlimited_s=self.unlimited_s, source="slurm",
        )
        info.skipped = jobs.skipped + tres.skipped + prio.skipped + nodes.skipped + info.skipped
        info.queue = frozenset(jobs.listed)
        seen = {j.id for j in snap.pending} | {r.job.id for r in snap.running}
        info.unparsed = listed - seen
        info.calls = self.runner.calls_this_cycle
        info.seconds = time.monotonic() - t0
        self._last = info
        return snap

    def _outputs(self, parts: Sequence[str]
                 ) -> tuple[Parsed[PrioRecord], Parsed[JobRecord], Parsed[TresRecord], Parsed[NodeRecord]]:
        """sprio, squeue -o, squeue -O and sinfo, each parsed: one after another, or in the groups of
        ``concurrent`` (a group's commands at once, each parsed in its thread as soon as it ends)."""
        reads: dict[str, tuple[list[str], str, Callable[[str], Any]]] = {
            "sprio": (sprio_argv(parts), "latin-1", parse_sprio),
            "squeue -o": (squeue_jobs_argv(parts), "latin-1", parse_squeue_jobs),
            "squeue -O": (squeue_tres_argv(parts), "utf-8", parse_squeue_tres),
            "sinfo": (sinfo_argv(parts), "utf-8", parse_sinfo_nodes),
        }
        groups = CONCURRENT_GROUPS if self.concurrent else tuple((name,) for name in reads)
        out: dict[str, Any] = {}
        runner = self.runner
        for group in groups:
            if len(group) == 1:
                argv, encoding, parse = reads[group[0]]
                out[group[0]] = parse(runner.run(argv, encoding=encoding).stdout)
                continue
            for name in group:  # the call budget and the RPC bucket, in order, before any starts
                runner.reserve(reads[name][0])
            with ThreadPoolExecutor(max_workers=len(group), thread_name_prefix="slurm-read") as pool:
                futures = [pool.submit(_run_parse, runner, *reads[name]) for name in group]
                wait(futures)
            for f in futures:  # every call has ended: the first failure, in call order
                exc = f.exception()
                if exc is not None:
                    raise exc
            out.update(zip(group, (f.result() for f in futures), strict=True))
        return out["sprio"], out["squeue -o"], out["squeue -O"], out["sinfo"]

    def _check(self, clock: float, prio: Sequence[PrioRecord], listed: Sequence[tuple[str, str]],
               tres: Sequence[TresRecord], nodes: Sequence[NodeRecord], previous: frozenset[str] | None
               ) -> None:
        """The read checks of ``integrity``, in one place (see the module docstring there)."""
        ids = {j for j, _ in listed}
        pending = {j for j, s in listed if s == "PENDING"}
        prio_ids = {p.job_id for p in prio}
        eligible = {t.job_id for t in tres if t.job_id in pending and t.eligible is not None
                    and t.eligible < clock - SETTLE_S}
        check_sprio(prio_ids, ids, self.limits)
        check_sprio_covers(eligible, prio_ids, self.limits)
        check_tres(pending, {t.job_id for t in tres}, self.limits)
        names = {n.name for n in nodes}
        if self.partitions:
            found = {n.partition for n in nodes}
            unknown = [p for p in self.partitions if p not in found]
            if unknown:
                raise SlurmError(f"sinfo lists no node in partition(s) {', '.join(unknown)}: check "
                                 "[slurm] partitions (sinfo -s shows the partitions Slurm has)")
        if not names or len(names) < (1 - self.limits.max_drop_share) * self._nodes:
            raise SuspectRead("nodes", f"sinfo listed {len(names)} node(s), {self._nodes} before")
        self._nodes = len(names)
        if previous is not None:
            sample = vanished_sample(previous, ids, self.limits)
            if sample:
                check_drop(sample, self.confirm(sample, single=False), len(previous), len(ids))

    def watch(self) -> frozenset[tuple[str, str]]:
        """The queue check between cycles: ids and states of the jobs ``read`` lists (so they compare
        exactly with ``last.queue``), one call, bounded by the ping timeout so a hung controller cannot
        stall the loop."""
        self.runner.begin_cycle()
        res = self.runner.run(queue_argv(self.partitions), timeout=self.runner.ping_timeout)
        return frozenset(parse_job_states(res.stdout, "squeue (queue check)"))

    def confirm(self, job_ids: Collection[str], *, single: bool = True) -> dict[str, Fate]:
        """What Slurm says of jobs a read did not list (see ``integrity.Fate``): one ``squeue -t all``
        for up to ``CONFIRM_BATCH`` ids, then (``single``) up to ``single_checks`` ids it did not list,
        asked one at a time, since only then does Slurm say that it no longer knows an id. Ids left
        unasked are ``unknown``: the caller asks again next cycle."""
        ids = sorted(set(job_ids), key=job_order)
        out = {j: Fate("unknown") for j in ids}
        if not ids:
            return out
        batch = ids[:CONFIRM_BATCH]
        res = self.runner.run(confirm_argv(batch), check=False)
        if len(batch) == 1 and res.rc != 0 and INVALID_JOB in res.stderr:
            # squeue -j with one id Slurm no longer knows fails with "Invalid job id" (every release
            # 22.05-25.11); with several it lists the rest. Either way that id is positively gone.
            out[batch[0]] = Fate("gone")
            return out
        classify(confirm_argv(batch), res.rc, res.stdout, res.stderr)
        for job_id, state in parse_job_states(res.stdout, "squeue -t all"):
            if job_id in out:
                out[job_id] = fate_of(state)
        if not single:
            return out
        for job_id in [j for j in batch if out[j].kind == "unknown"][: self.single_checks]:
            res = self.runner.run(confirm_argv([job_id]), check=False)
            if res.rc != 0 and INVALID_JOB in res.stderr:
                out[job_id] = Fate("gone")
            elif res.rc == 0:
                states = dict(parse_job_states(res.stdout, "squeue -t all -j"))
                if job_id in states:
                    out[job_id] = fate_of(states[job_id])
        return out
