"""The undo record: every field of every job the daemon changed, with its original value, so that
every change can be undone; which jobs it keeps its hands off; the starvation guard's memory.

Plain data and its JSON form. Where it is kept (``service.statefile``'s journal, or memory in the
simulator) is the caller's business: the decision core does no I/O of its own.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any

from rltune_daemon.domain import job_order

STATE_VERSION = 1


FIELDS = ("site_factor", "exc_nodes", "req_nodes")


Value = int | tuple[str, ...]


@dataclass
class FieldChange:
    """One field of one job the daemon changed. ``previous`` is the value before the last write: while
    ``confirmed`` is False, reading either ``value`` or ``previous`` back from Slurm is our own doing."""

    original: Value
    value: Value
    previous: Value
    first_set: float
    last_set: float
    confirmed: bool = False


@dataclass
class JobRecord:
    """What the daemon did to one job. ``hint_age``: cycles the job spent pending with a node hint
    (all hints together); ``hint_done``: no more hints for this job (one expired). ``started``: seen
    running (a requeued job that comes back gets its hint removed)."""

    fields: dict[str, FieldChange] = field(default_factory=dict)
    hint_age: int = 0
    hint_done: bool = False
    hint_nodes: tuple[str, ...] = ()
    started: bool = False

    def empty(self) -> bool:
        # A job whose hint was taken off early (Slurm said it waits for the hinted node) keeps the
        # cycles it was hinted: forgetting them would hint it again and again, never reaching the
        # ``hint_cycles`` that bounds how long a hint may delay it.
        return not self.fields and not self.hint_done and not self.hint_nodes and not self.hint_age

    def to_json(self) -> dict[str, Any]:
        return {
            "fields": {
                name: {
                    "original": _value_to_json(fc.original), "value": _value_to_json(fc.value),
                    "previous": _value_to_json(fc.previous), "first_set": round(fc.first_set, 3),
                    "last_set": round(fc.last_set, 3), "confirmed": fc.confirmed,
                }
                for name, fc in self.fields.items()
            },
            "hint_age": self.hint_age, "hint_done": self.hint_done, "hint_nodes": list(self.hint_nodes),
            "started": self.started,
        }

    @staticmethod
    def from_json(raw: Any, job_id: str) -> JobRecord:
        rec = JobRecord(
            hint_age=int(raw.get("hint_age", 0)), hint_done=bool(raw.get("hint_done", False)),
            hint_nodes=tuple(str(n) for n in raw.get("hint_nodes", ())),
            started=bool(raw.get("started", False)),
        )
        for name, fc in dict(raw.get("fields", {})).items():
            if name not in FIELDS:
                raise ValueError(f"job {job_id}: unknown field {name!r}")
            where = f"job {job_id} {name}"
            rec.fields[name] = FieldChange(
                original=_value_from_json(fc["original"], where), value=_value_from_json(fc["value"], where),
                previous=_value_from_json(fc.get("previous", fc["original"]), where),
                first_set=float(fc.get("first_set", 0.0)), last_set=float(fc.get("last_set", 0.0)),
                confirmed=bool(fc.get("confirmed", False)),
            )
        return rec


def _value_to_json(v: Value) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _value_from_json(v: Any, where: str) -> Value:
    if isinstance(v, bool):
        raise ValueError(f"{where}: boolean where a value was expected")
    if isinstance(v, int):
        return v
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return tuple(v)
    raise ValueError(f"{where}: expected an integer or a list of node names, got {v!r}")


@dataclass
class DaemonState:
    """Everything that must survive a restart: changed jobs, jobs left alone because someone else
    changed them (``hands_off``: job -> why), and the starvation guard's memory."""

    jobs: dict[str, JobRecord] = field(default_factory=dict)
    hands_off: dict[str, str] = field(default_factory=dict)
    demoted_since: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        jobs = {job_id: self.jobs[job_id].to_json() for job_id in sorted(self.jobs, key=job_order)}
        return {
            "version": STATE_VERSION, "written": round(time.time(), 3), "host": socket.gethostname(),
            "jobs": jobs, "hands_off": dict(self.hands_off),
            "demoted_since": {k: round(v, 3) for k, v in self.demoted_since.items()},
        }

    @staticmethod
    def from_json(data: Any) -> DaemonState:
        if not isinstance(data, dict):
            raise ValueError("top level is not an object")
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported version {data.get('version')!r} (expected {STATE_VERSION})")
        state = DaemonState()
        for job_id, raw in dict(data.get("jobs", {})).items():
            state.jobs[str(job_id)] = JobRecord.from_json(raw, str(job_id))
        state.hands_off = {str(k): str(v) for k, v in dict(data.get("hands_off", {})).items()}
        state.demoted_since = {str(k): float(v) for k, v in dict(data.get("demoted_since", {})).items()}
        return state

