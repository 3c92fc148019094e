"""Read a ``Snapshot`` from Slurm with the fewest, cheapest client calls.

One cycle = 5 calls (all pipe-separated text; ``--json`` is 7x slower in 22.05 and ignores filters,
FACTS e): ``scontrol ping`` (skip the cycle at once when slurmctld is down, FACTS g), ``squeue -o``
(pending + running jobs, one line per array task), ``squeue -O`` (per-job/per-task GPU requests and
total CPUs/memory, which ``-o`` cannot print), ``sprio`` (site factor + factors), ``sinfo -N -O``
(nodes, GRES in use, state, and each partition's PriorityTier/PriorityJobFactor/MaxTime). A queue
check between cycles (``watch``) is the one ``squeue -o``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rltune_daemon.domain import Snapshot
from rltune_daemon.slurm.assemble import UNLIMITED_DEFAULT_S, ReadInfo, build_snapshot, queue_signature
from rltune_daemon.slurm.errors import ControllerDown
from rltune_daemon.slurm.parse import (
    SINFO_NODE_FORMAT,
    SPRIO_FORMAT,
    SQUEUE_JOB_FORMAT,
    SQUEUE_TRES_FORMAT,
    PrioRecord,
    parse_sinfo_nodes,
    parse_sprio,
    parse_squeue_jobs,
    parse_squeue_tres,
)
from rltune_daemon.slurm.runner import SlurmRunner


@runtime_checkable
class SnapshotReader(Protocol):
    """What the service needs from a backend: a Snapshot per call, plus details of the last read."""

    @property
    def last(self) -> ReadInfo | None: ...

    def read(self) -> Snapshot: ...


def squeue_jobs_argv(partitions: Sequence[str] = ()) -> list[str]:
    """``-r``: one line per array task. Without it squeue folds tasks that were split off (own raw id,
    own priority) into the ``A_[...]`` line of the array and hides their ids (seen on 22.05)."""
    argv = ["squeue", "-h", "-a", "-r", "-t", "PD,R", "-o", SQUEUE_JOB_FORMAT]
    return argv + (["-p", ",".join(partitions)] if partitions else [])


def squeue_tres_argv(partitions: Sequence[str] = ()) -> list[str]:
    argv = ["squeue", "-h", "-a", "-r", "-t", "PD,R", "-O", SQUEUE_TRES_FORMAT]
    return argv + (["-p", ",".join(partitions)] if partitions else [])


def sprio_argv() -> list[str]:
    return ["sprio", "-h", "-o", SPRIO_FORMAT]


def sinfo_argv(partitions: Sequence[str] = ()) -> list[str]:
    argv = ["sinfo", "-h", "-a", "-N", "-O", SINFO_NODE_FORMAT]
    return argv + (["-p", ",".join(partitions)] if partitions else [])


class SlurmReader:
    """CLI backend. ``read()`` starts a new call-budget cycle on the runner (the writer's calls of the
    same cycle count after it) and raises ``ControllerDown``/``CommandTimeout``/``ParseError``..."""

    def __init__(
        self,
        runner: SlurmRunner,
        *,
        partitions: Sequence[str] = (),
        ping_first: bool = True,
        unlimited_s: float = UNLIMITED_DEFAULT_S,
    ) -> None:
        self.runner = runner
        self.partitions = tuple(partitions)
        self.ping_first = ping_first
        self.unlimited_s = unlimited_s
        self._last: ReadInfo | None = None

    @property
    def last(self) -> ReadInfo | None:
        return self._last

    def read(self) -> Snapshot:
        t0 = time.monotonic()
        self.runner.begin_cycle()
        if self.ping_first and not self.runner.ping():
            raise ControllerDown("slurmctld unreachable (scontrol ping: DOWN); cycle skipped")
        clock = time.time()
        jobs = parse_squeue_jobs(self.runner.run(squeue_jobs_argv(self.partitions)).stdout)
        tres = parse_squeue_tres(self.runner.run(squeue_tres_argv(self.partitions)).stdout)
        prio = parse_sprio(self.runner.run(sprio_argv()).stdout)
        nodes = parse_sinfo_nodes(self.runner.run(sinfo_argv(self.partitions)).stdout)
        by_job: dict[str, list[PrioRecord]] = {}
        for p in prio.records:
            by_job.setdefault(p.job_id, []).append(p)
        snap, info = build_snapshot(
            clock, jobs.records, {t.job_id: t for t in tres.records}, by_job, nodes.records,
            unlimited_s=self.unlimited_s, source="slurm",
        )
        info.skipped = jobs.skipped + tres.skipped + prio.skipped + nodes.skipped + info.skipped
        info.queue = queue_signature(jobs.records)
        info.calls = self.runner.calls_this_cycle
        info.seconds = time.monotonic() - t0
        self._last = info
        return snap

    def watch(self) -> frozenset[tuple[str, str]]:
        """The queue check between cycles: the same ``squeue -o`` as ``read`` (so ids and states compare
        exactly with ``last.queue``), one call, bounded by the ping timeout so a hung controller cannot
        stall the loop."""
        self.runner.begin_cycle()
        res = self.runner.run(squeue_jobs_argv(self.partitions), timeout=self.runner.ping_timeout)
        return queue_signature(parse_squeue_jobs(res.stdout).records)
