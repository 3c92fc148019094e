"""The durable record of every change the daemon made, so that every change can be undone.

One JSON file (``state.json`` in systemd's StateDirectory). For each job and field the daemon changed
it keeps the *original* value (before the daemon first touched it), the value it last asked for, the
value before that write, and when. Writes are atomic (temp file, fsync, rename, fsync of the
directory): a crash leaves the old or the new file, never half of one. The loop saves *before* sending
updates to Slurm (write-ahead), so an original is never lost even if the process dies mid-write; an
unconfirmed write is settled by reading Slurm on the next cycle.

A lock file next to the state file keeps two live daemons (or a daemon and ``--restore``) from
fighting over the same jobs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from rltune_daemon.domain import job_order
from rltune_daemon.errors import UserError

STATE_VERSION = 1
FIELDS = ("site_factor", "exc_nodes", "req_nodes")
Value = int | tuple[str, ...]


class StateError(UserError):
    """The state file cannot be read, written or locked; the message says which file and why."""


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
        jobs: dict[str, Any] = {}
        for job_id, rec in sorted(self.jobs.items(), key=lambda kv: job_order(kv[0])):
            jobs[job_id] = {
                "fields": {
                    name: {
                        "original": _value_to_json(fc.original), "value": _value_to_json(fc.value),
                        "previous": _value_to_json(fc.previous), "first_set": round(fc.first_set, 3),
                        "last_set": round(fc.last_set, 3), "confirmed": fc.confirmed,
                    }
                    for name, fc in rec.fields.items()
                },
                "hint_age": rec.hint_age, "hint_done": rec.hint_done, "hint_nodes": list(rec.hint_nodes),
                "started": rec.started,
            }
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
                    original=_value_from_json(fc["original"], where),
                    value=_value_from_json(fc["value"], where),
                    previous=_value_from_json(fc.get("previous", fc["original"]), where),
                    first_set=float(fc.get("first_set", 0.0)), last_set=float(fc.get("last_set", 0.0)),
                    confirmed=bool(fc.get("confirmed", False)),
                )
            state.jobs[str(job_id)] = rec
        state.hands_off = {str(k): str(v) for k, v in dict(data.get("hands_off", {})).items()}
        state.demoted_since = {str(k): float(v) for k, v in dict(data.get("demoted_since", {})).items()}
        return state


class StateFile:
    """Load/save ``DaemonState`` at ``path``; ``path`` None keeps it in memory (simulator backend)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock: TextIO | None = None

    def load(self) -> DaemonState:
        """The saved state; an empty one when the file does not exist. A corrupt file is an error, not a
        fresh start: it may hold the only record of original priorities."""
        if self.path is None or not self.path.exists():
            return DaemonState()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return DaemonState.from_json(data)
        except OSError as exc:
            raise StateError(f"cannot read state file {self.path}: {exc.strerror or exc}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise StateError(
                f"state file {self.path} is corrupt ({exc}); inspect it, then move it away to start "
                "fresh (jobs it lists keep the SiteFactor/ExcNodeList it set until they start)"
            ) from None

    def save(self, state: DaemonState) -> None:
        """Atomic replace (see module docstring)."""
        if self.path is None:
            return
        directory = self.path.parent
        text = json.dumps(state.to_json(), indent=1, sort_keys=True) + "\n"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.chmod(tmp, 0o640)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            dfd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as exc:
            raise StateError(f"cannot write state file {self.path}: {exc.strerror or exc}") from None

    def check_writable(self) -> None:
        """Fail early (before any change to Slurm) when the state directory is not writable."""
        if self.path is None:
            return
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(f"cannot create state directory {directory}: {exc.strerror or exc} "
                             "(set state_file, or run under systemd with StateDirectory=)") from None
        if not os.access(directory, os.W_OK):
            raise StateError(f"state directory {directory} is not writable by this user "
                             "(set state_file, or run under systemd with StateDirectory=)")

    # ---- single writer -----------------------------------------------------------------------

    def lock(self) -> None:
        """Take ``<state>.lock`` (non-blocking); raise ``StateError`` naming the holder's pid."""
        if self.path is None or self._lock is not None:
            return
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the process lifetime
        except OSError as exc:
            raise StateError(f"cannot open lock file {lock_path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            fh.close()
            raise StateError(f"another rltune-daemon (pid {holder}) is using {self.path}; stop it first "
                             "(systemctl stop rltune-daemon) or use --dry-run") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._lock = fh

    def unlock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None
