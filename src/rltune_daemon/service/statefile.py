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
import tempfile
from pathlib import Path
from typing import TextIO

from rltune_daemon.core.record import DaemonState
from rltune_daemon.errors import UserError


class StateError(UserError):
    """The state file cannot be read, written or locked; the message says which file and why."""












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
