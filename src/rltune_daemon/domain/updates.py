"""What the daemon's decision core exchanges with a cluster, real or simulated: the updates it asks
for and their outcomes (``JobUpdate`` -> ``ApplyResult``), what a read learned besides the Snapshot
(``ReadInfo``), and what became of a job a read did not list (``Fate``). Plain data: the Slurm CLI
backend and the simulated Slurm both produce and consume it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal


class UpdateStatus(StrEnum):
    APPLIED = "applied"
    FAILED = "failed"  # Slurm rejected the line; nothing of it was applied (FACTS d)
    UNKNOWN = "unknown"  # timeout / controller trouble: re-read before deciding
    REFUSED = "refused"  # not sent: job not pending, held or admin-prioritised
    UNCHANGED = "unchanged"  # not sent: already at the requested values
    PLANNED = "planned"  # dry run: would be sent


@dataclass(frozen=True, slots=True)
class JobUpdate:
    """Requested values for one pending job (``None`` = leave as is). Node lists are node names;
    an empty tuple clears the list."""

    job_id: str
    site_factor: int | None = None
    req_nodes: tuple[str, ...] | None = None
    exc_nodes: tuple[str, ...] | None = None
    oversubscribe: bool | None = None


@dataclass(frozen=True, slots=True)
class JobResult:
    job_id: str
    status: UpdateStatus
    reason: str = ""
    line: str = ""


@dataclass(frozen=True)
class ApplyResult:
    results: tuple[JobResult, ...]
    rc: int | None = None
    seconds: float = 0.0
    dry_run: bool = False
    stderr: str = field(default="", repr=False)

    def _ids(self, status: UpdateStatus) -> tuple[str, ...]:
        return tuple(r.job_id for r in self.results if r.status is status)

    @property
    def applied(self) -> tuple[str, ...]:
        return self._ids(UpdateStatus.APPLIED)

    @property
    def failed(self) -> tuple[str, ...]:
        return self._ids(UpdateStatus.FAILED)

    @property
    def unknown(self) -> tuple[str, ...]:
        return self._ids(UpdateStatus.UNKNOWN)

    @property
    def refused(self) -> tuple[str, ...]:
        return self._ids(UpdateStatus.REFUSED)

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(r.line for r in self.results if r.line)

    def by_job(self) -> dict[str, JobResult]:
        return {r.job_id: r for r in self.results}


FateKind = Literal["ended", "gone", "alive", "other", "unknown"]


@dataclass(frozen=True, slots=True)
class Fate:
    """What Slurm says of a job a read did not list. ``ended``: a final state; ``gone``: Slurm no longer
    knows the id ("Invalid job id specified"); ``alive``: PENDING or RUNNING (then the read missed it);
    ``other``: another state (suspended, completing, requeued...): it exists but is not pending;
    ``unknown``: no answer either way. Only ``ended`` and ``gone`` are evidence that a job is over."""

    kind: FateKind
    state: str = ""

    @property
    def over(self) -> bool:
        return self.kind in ("ended", "gone")


@dataclass
class ReadInfo:
    """What the reader learned besides the Snapshot.

    ``skipped``: ``(id, reason)`` of records left out. ``site_factor_unknown``: pending jobs absent from
    sprio (held, or released less than ~1 s ago, FACTS a) whose ``site_factor`` of 0 is a guess; the
    writer always writes SiteFactor for them instead of comparing. ``array_tasks``: tasks per record
    for pending arrays. ``display_ids``: ``A_T`` / ``A_[tasks]`` ids as users see them in squeue.
    ``queue``: ``(job id, state)`` of every pending and running job squeue listed, to compare with a
    later ``watch`` (see ``queue_signature``). ``unparsed``: jobs squeue listed that are not in the
    Snapshot (a record that did not parse, or left between two calls): they exist, so a record of
    them is kept, but nothing is planned for them. ``slurm_counts``: slurmctld's own pending/running
    counts and backfill statistics (Slurm 25.11's metrics endpoint), where it is on.
    """

    skipped: list[tuple[str, str]] = field(default_factory=list)
    site_factor_unknown: frozenset[str] = frozenset()
    array_tasks: dict[str, int] = field(default_factory=dict)
    display_ids: dict[str, str] = field(default_factory=dict)
    queue: frozenset[tuple[str, str]] = frozenset()
    unparsed: frozenset[str] = frozenset()
    calls: int = 0
    seconds: float = 0.0
    slurm_counts: dict[str, float] = field(default_factory=dict)  # slurmctld's own metrics, where read
    slurm_metrics_error: str = ""  # why they could not be read, on the read where that was first seen

