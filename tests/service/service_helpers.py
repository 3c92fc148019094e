"""Builders shared by the service tests: small Snapshots, Plans, configs and a scripted backend."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rltune_daemon.domain import (
    Job,
    NodeAlloc,
    NodeState,
    PartitionSpec,
    PendingState,
    Placement,
    PlacementKind,
    Plan,
    PlanEntry,
    RunningJob,
    Snapshot,
)
from rltune_daemon.domain.updates import ApplyResult, Fate, JobResult, JobUpdate, ReadInfo, UpdateStatus
from rltune_daemon.service.config import DaemonConfig, load_config
from rltune_daemon.service.statefile import StateFile
from rltune_daemon.slurm.errors import ControllerDown
from rltune_daemon.slurm.integrity import check_alive
from rltune_daemon.slurm.writer import prepare

NODES = (("p100-1", "p100", 4, 8), ("p100-2", "p100", 4, 8), ("k80-1", "k80", 2, 8), ("k80-2", "k80", 2, 8),
         ("m40-1", "m40", 1, 4))
ALL_NODES = tuple(n for n, *_ in NODES)


def node_states(busy: dict[str, int] | None = None,
                state: dict[str, str] | None = None) -> tuple[NodeState, ...]:
    busy = busy or {}
    state = state or {}
    return tuple(
        NodeState(name=n, gpu_type=t, gpus=g, gpus_alloc=busy.get(n, 0), cpus=c, cpus_alloc=0, mem_mb=32000,
                  mem_alloc_mb=0, partitions=("gpu",), state=state.get(n, "mixed" if busy.get(n) else "idle"))
        for n, t, g, c in NODES
    )


def pending(job_id: str, *, gpus: int = 1, limit: float = 600.0, submit: float = 0.0, user: str = "alice",
            prio: int = 1000, site: int = 0, **state: Any) -> tuple[Job, PendingState]:
    job = Job(job_id, submit, gpus, limit, user=user, account="acct", partition="gpu")
    return job, PendingState(priority=prio + site, site_factor=site, reason=state.pop("reason", "Priority"),
                             **state)


def snapshot(jobs: Sequence[tuple[Job, PendingState]], *, running: Sequence[str] = (),
             busy: dict[str, int] | None = None, clock: float = 1000.0,
             state: dict[str, str] | None = None) -> Snapshot:
    run = tuple(RunningJob(Job(r, 0.0, 1, 3600.0, user="bob", partition="gpu"), 0.0, 3600.0,
                           (NodeAlloc("k80-1", 1),)) for r in running)
    return Snapshot(clock, tuple(j for j, _ in jobs), tuple(s for _, s in jobs), run,
                    node_states(busy, state), (PartitionSpec("gpu"),), "test")


def entry(job_id: str, rank: int, site: int, *, prio: int = 1000, hint: Sequence[str] = (),
          starts_now: bool = False) -> PlanEntry:
    place = Placement(PlacementKind.SPREAD, tuple(hint)) if hint else Placement()
    reason = "up 1 (test): 10m asked" + ("; starts now" if starts_now or hint else "")
    return PlanEntry(job_id=job_id, rank=rank, score=0.0, current_priority=prio, target_priority=prio + site,
                     site_factor=site, placement=place, reason=reason, starts_now=starts_now or bool(hint))


def plan_of(*entries: PlanEntry, skipped: Sequence[tuple[str, str]] = ()) -> Plan:
    return Plan(1000.0, "test", tuple(entries), tuple(skipped))


def recorded(path: Path) -> dict[str, Any]:
    """The undo record the state file at ``path`` holds, in its JSON form (as the JSON state file of
    earlier versions held it), read by a second reader as an operator would."""
    with contextlib.closing(StateFile(path)) as reader:
        return reader.load().to_json()


def write_config(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def config(tmp_path: Path, **overrides: Any) -> DaemonConfig:
    """A config with metrics off and the state file under ``tmp_path``; ``overrides`` as TOML keys."""
    data: dict[str, Any] = {"state_file": str(tmp_path / "state.json"), "metrics": {"enabled": False},
                            "base_policy": "sjf"}
    for key, value in overrides.items():
        if "__" in key:
            sect, sub = key.split("__", 1)
            data.setdefault(sect, {})[sub] = value
        else:
            data[key] = value
    path = tmp_path / "cfg.toml"
    path.write_text(_toml(data))
    return load_config(path)


def _toml(data: dict[str, Any]) -> str:
    top = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    sections = [f"[{k}]\n" + "\n".join(f"{k2} = {json.dumps(v2)}" for k2, v2 in v.items())
                for k, v in data.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n\n" + "\n\n".join(sections) + "\n"


@dataclass
class ScriptedBackend:
    """A backend that returns the given snapshots in turn and records what it was asked to apply.
    ``down`` makes ``read`` raise ControllerDown; ``statuses`` forces per-job statuses. ``watches``:
    what successive queue checks see (``"same"``: the last read's queue, ``"new"``: a new pending job,
    ``"down"``: the controller does not answer, ``"bug"``: any other exception); the last entry repeats."""

    snapshots: list[Snapshot]
    name: str = "slurm"
    down: bool = False
    statuses: dict[str, UpdateStatus] = field(default_factory=dict)
    applied: list[list[JobUpdate]] = field(default_factory=list)
    reads: int = 0
    watches: list[str] = field(default_factory=lambda: ["same"])
    checks: int = 0
    fates: dict[str, Fate] = field(default_factory=dict)  # confirm(): default "ended"
    confirmed: list[list[str]] = field(default_factory=list)
    sim_clock: float = 0.0
    _last: ReadInfo | None = None

    @property
    def last(self) -> ReadInfo | None:
        return self._last

    def read(self) -> Snapshot:
        self.reads += 1
        if self.down:
            raise ControllerDown("slurmctld unreachable (scontrol ping: DOWN); cycle skipped")
        snap = self.snapshots[min(self.reads - 1, len(self.snapshots) - 1)]
        self._last = ReadInfo(queue=frozenset([(j.id, "PENDING") for j in snap.pending]
                                              + [(r.job.id, "RUNNING") for r in snap.running]))
        return snap

    def watch(self) -> frozenset[tuple[str, str]]:
        what = self.watches[min(self.checks, len(self.watches) - 1)]
        self.checks += 1
        if what == "down":
            raise ControllerDown("slurmctld unreachable")
        if what == "bug":
            raise ValueError("unexpected squeue output")
        queue = self._last.queue if self._last is not None else frozenset()
        return queue | {("new", "PENDING")} if what == "new" else queue

    def confirm(self, job_ids: Collection[str]) -> dict[str, Fate]:
        self.confirmed.append(sorted(job_ids))
        fates = {j: self.fates.get(j, Fate("ended", "COMPLETED")) for j in job_ids}
        check_alive(fates)  # as SlurmBackend.confirm: a job Slurm still lists means the read missed it
        return fates

    def apply(self, snapshot: Snapshot, updates: Iterable[JobUpdate], *,
              site_factor_unknown: Collection[str] = frozenset(), dry_run: bool = False,
              restore: bool = False, should_stop: Callable[[], bool] | None = None) -> ApplyResult:
        ups = list(updates)
        prep = prepare(snapshot, ups, site_factor_unknown=site_factor_unknown, restore=restore)
        if dry_run:
            return ApplyResult(prep.decided + tuple(JobResult(j, UpdateStatus.PLANNED, "", ln)
                                                    for j, ln in prep.lines), dry_run=True)
        self.applied.append(ups)
        res = tuple(JobResult(j, self.statuses.get(j, UpdateStatus.APPLIED), "forced", ln)
                    for j, ln in prep.lines)
        return ApplyResult(prep.decided + res, 0)

    def calls(self) -> int:
        return 0

    def tick(self, interval: float) -> float:
        self.sim_clock += interval  # named "sim": a simulated clock that moves by the asked step
        return 0.0

    def clock(self) -> float:
        return time.monotonic() if self.name == "slurm" else self.sim_clock

    def done(self) -> bool:
        return False

    def summary(self) -> dict[str, Any]:
        return {}


def with_site(snap: Snapshot, sites: dict[str, int] | None = None, exc: dict[str, str] | None = None,
              drop: Collection[str] = ()) -> Snapshot:
    """``snap`` as Slurm would show it after SiteFactor/ExcNodeList changes (and with jobs gone)."""
    sites, exc = sites or {}, exc or {}
    jobs, states = [], []
    for j, s in zip(snap.pending, snap.pending_state, strict=True):
        if j.id in drop:
            continue
        site = sites.get(j.id, s.site_factor)
        s2 = dataclasses.replace(s, site_factor=site, priority=s.priority - s.site_factor + site,
                                 exc_nodes=exc.get(j.id, s.exc_nodes))
        jobs.append(j)
        states.append(s2)
    return dataclasses.replace(snap, pending=tuple(jobs), pending_state=tuple(states))


class NullLog:
    """structlog stand-in that keeps events for assertions."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def _log(self, level: str, event: str, **kw: Any) -> None:
        self.events.append((level, event, kw))

    def info(self, event: str, **kw: Any) -> None:
        self._log("info", event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._log("warning", event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        self._log("error", event, **kw)

    def debug(self, event: str, **kw: Any) -> None:
        self._log("debug", event, **kw)

    def named(self, event: str) -> list[dict[str, Any]]:
        return [kw for _, e, kw in self.events if e == event]


def out_buffer() -> io.StringIO:
    return io.StringIO()
