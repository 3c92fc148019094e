"""The durable record of every change the daemon made, so that every change can be undone.

A SQLite journal (``state.db`` in systemd's StateDirectory): one row per job the daemon changed (its
``JobRecord`` in the record's JSON form: for each field the *original* value, before the daemon first
touched it, the value it last asked for, the value before that write, and when), one per job it keeps
its hands off, one per job the starvation guard remembers. A save is one transaction holding only the
rows that differ from the last commit, so it costs what changed since then, not what is recorded. WAL
mode with ``synchronous=FULL``: a save is durable when it returns, and a crash at any point (SIGKILL
mid-transaction included) leaves the last committed record. The loop saves *before* sending updates to
Slurm (write-ahead), so an original is never lost even if the process dies mid-write; an unconfirmed
write is settled by reading Slurm on the next cycle.

Earlier versions kept the record in one JSON file, ``state.json``. A configured ``X.json`` therefore
means the journal ``X.db`` beside it, and ``migrate`` imports the JSON file there once, keeping it as
``X.json.migrated``; until then ``load`` reads it as it is (``--dry-run`` writes nothing).

A lock file next to the journal keeps two live daemons (or a daemon and ``--restore``) from fighting
over the same jobs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from operator import attrgetter
from pathlib import Path
from typing import Any, TextIO, TypeVar

from rltune_daemon.core.record import DaemonState, FieldChange, JobRecord
from rltune_daemon.domain import job_order
from rltune_daemon.errors import UserError


class StateError(UserError):
    """The state file cannot be read, written or locked; the message says which file and why."""


JOURNAL_FORMAT = 1  # PRAGMA user_version of the journal's tables; 0: a file whose tables never committed
_TABLES = ("jobs", "hands_off", "demoted_since")  # id -> record (JSON text), reason, first demoted (s)
_SCHEMA = (
    "CREATE TABLE jobs (id TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE hands_off (id TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE demoted_since (id TEXT PRIMARY KEY, value REAL NOT NULL)",
    "CREATE TABLE meta (id TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"PRAGMA user_version = {JOURNAL_FORMAT}",
)
_MIGRATED_FROM = "migrated_from_sha256"  # meta row: the JSON file this journal was imported from
# SQLite's word for "these bytes are not the journal this code writes"; any other SQLite error is I/O
_NOT_A_JOURNAL = (sqlite3.SQLITE_ERROR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
_BAD_RECORD = (ValueError, KeyError, TypeError, AttributeError)  # what the JSON form raises on bad data
_ABSENT = object()
_T = TypeVar("_T")

# Every attribute of a record but its dict of fields, and every attribute of a field, read from the
# dataclasses: an attribute added to the record is compared (so saved) without a change here.
_job_values = attrgetter(*(f.name for f in dataclasses.fields(JobRecord) if f.name != "fields"))
_field_values = attrgetter(*(f.name for f in dataclasses.fields(FieldChange)))


def journal_path(configured: Path) -> Path:
    """The journal a configured ``state_file`` names: ``X.json`` (written for the JSON file of earlier
    versions) means ``X.db`` beside it, so that configuration keeps its record; any other name is the
    journal itself."""
    return configured.with_suffix(".db") if configured.suffix == ".json" else configured


def legacy_path(journal: Path) -> Path | None:
    """The JSON file an earlier version kept for the configuration that names ``journal``: ``X.json``
    beside ``X.db`` (``migrate`` imports it); None for a journal not named ``.db``."""
    return journal.with_suffix(".json") if journal.suffix == ".db" else None


@dataclasses.dataclass
class _Diff:
    """The rows of one table that differ from the last commit: ``put`` id -> value, ``gone`` ids."""

    put: dict[str, Any]
    gone: set[str]

    def __bool__(self) -> bool:
        return bool(self.put or self.gone)

    def advance(self, committed: dict[str, Any]) -> None:
        """Make ``committed`` (what the journal held before this diff's commit) what it holds after."""
        committed.update(self.put)
        for key in self.gone:
            del committed[key]


def _diff(now: Mapping[str, Any], committed: Mapping[str, Any]) -> _Diff:
    put = {k: v for k, v in now.items() if committed.get(k, _ABSENT) != v}
    return _Diff(put, committed.keys() - now.keys())


def _diff_jobs(jobs: Mapping[str, JobRecord], committed: Mapping[str, tuple[Any, ...]]) -> _Diff:
    """The jobs whose fingerprint moved, with their new fingerprints. A fingerprint is the values
    ``JobRecord.to_json`` writes, immutable (the record's own values, its field names, then each field's
    values): an unchanged tuple means an unchanged row, neither serialised nor written. Building it is
    what a save costs per recorded job, so it is built inline, with no call per job."""
    put = {}
    get = committed.get
    for job_id, rec in jobs.items():
        fingerprint = (_job_values(rec), *rec.fields, *map(_field_values, rec.fields.values()))
        if get(job_id) != fingerprint:
            put[job_id] = fingerprint
    return _Diff(put, committed.keys() - jobs.keys())


@dataclasses.dataclass
class _Committed:
    """What the journal holds, in the form ``save`` compares with: job -> fingerprint, and copies of the
    two maps. Advanced only after a commit, so what a failed save missed is written by the next one."""

    jobs: dict[str, tuple[Any, ...]] = dataclasses.field(default_factory=dict)
    hands_off: dict[str, str] = dataclasses.field(default_factory=dict)
    demoted_since: dict[str, float] = dataclasses.field(default_factory=dict)

    @staticmethod
    def of(state: DaemonState) -> _Committed:
        return _Committed(_diff_jobs(state.jobs, {}).put, dict(state.hands_off), dict(state.demoted_since))


class StateFile:
    """Load/save ``DaemonState`` in the journal for ``path`` (see ``journal_path``); ``path`` None keeps
    it in memory (simulator backend), at no cost."""

    def __init__(self, path: Path | None) -> None:
        self.path = None if path is None else journal_path(path)
        self.legacy = None if self.path is None else legacy_path(self.path)
        self._db: sqlite3.Connection | None = None
        self._committed = _Committed()
        self._locks: list[TextIO] = []

    # ---- reading --------------------------------------------------------------------------------

    def load(self) -> DaemonState:
        """The saved state; an empty one when there is none. A corrupt file is an error, not a fresh
        start: it may hold the only record of original priorities. A JSON file not migrated yet is read
        as it is."""
        if self.path is None:
            return DaemonState()
        if self.path.exists():
            return self._open(self.path)
        if self.legacy is not None and self.legacy.exists():
            return _read_legacy(self.legacy)
        return DaemonState()

    def _open(self, path: Path) -> DaemonState:
        """Read what the journal holds (creating it when there is none): what the next save compares
        with."""
        db = self._connection(path)
        with _reading(path):
            state = _read_journal(db)
        self._committed = _Committed.of(state)
        return state

    def _connection(self, path: Path) -> sqlite3.Connection:
        if self._db is None:
            with _reading(path):
                self._db = _connect(path)
        return self._db

    # ---- writing --------------------------------------------------------------------------------

    def save(self, state: DaemonState) -> int:
        """Commit what differs from the last commit (module docstring); durable on return. Returns the
        rows written: 0 when nothing changed (no transaction at all)."""
        if self.path is None:
            return 0
        if self._db is None:
            self._open(self.path)
        return self._commit(self.path, state, {})

    def _commit(self, path: Path, state: DaemonState, meta: dict[str, str]) -> int:
        """One transaction: the rows that differ from ``_committed`` (read by ``_open``), and ``meta``."""
        committed = self._committed
        jobs = _diff_jobs(state.jobs, committed.jobs)
        hands_off = _diff(state.hands_off, committed.hands_off)
        demoted = _diff(state.demoted_since, committed.demoted_since)
        if not (meta or jobs or hands_off or demoted):
            return 0
        texts = _Diff({j: json.dumps(state.jobs[j].to_json(), separators=(",", ":")) for j in jobs.put},
                      jobs.gone)
        db = self._connection(path)
        before = db.total_changes
        _guarded(f"cannot write state file {path}",
                 lambda: _write(db, {"jobs": texts, "hands_off": hands_off, "demoted_since": demoted}, meta))
        jobs.advance(committed.jobs)
        hands_off.advance(committed.hands_off)
        demoted.advance(committed.demoted_since)
        return db.total_changes - before

    def close(self) -> None:
        """Close the journal; SQLite folds its write-ahead log back in and removes the log's files."""
        if self._db is not None:
            self._db.close()
            self._db = None

    # ---- migration from the JSON file of earlier versions ---------------------------------------

    def migrate(self) -> Path | None:
        """Import ``legacy`` into the journal in one transaction, then rename it ``<name>.migrated`` (never
        deleted); return that path, or None when there is nothing to migrate. Safe to repeat and to
        interrupt: a journal already imported from this very file only finishes the rename, an empty one
        is filled; a journal holding other records is an error naming both (which one is the record is
        not guessed). A corrupt JSON file is an error and stays where it is."""
        if self.path is None or self.legacy is None or not self.legacy.exists():
            return None
        legacy, kept = self.legacy, self.legacy.with_name(self.legacy.name + ".migrated")
        text = _read_bytes(legacy)
        records = _read_legacy(legacy, text)
        digest = hashlib.sha256(text).hexdigest()
        if not (self.path.exists() and self._meta(self.path, _MIGRATED_FROM) == digest):
            if kept.exists():
                raise StateError(f"cannot migrate {legacy}: {kept} exists; move it away first")
            held = self._open(self.path)
            if held.jobs or held.hands_off or held.demoted_since:
                raise StateError(f"{self.path} and {legacy} both hold records: undo {legacy}'s with the "
                                 "rltune-daemon version that wrote it (--restore), then move it away")
            self._commit(self.path, records, {_MIGRATED_FROM: digest})
        _guarded(f"cannot rename {legacy}", lambda: _rename_durably(legacy, kept))
        return kept

    def _meta(self, path: Path, key: str) -> str | None:
        db = self._connection(path)
        with _reading(path):
            row = db.execute("SELECT value FROM meta WHERE id = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # ---- checks and single writer ---------------------------------------------------------------

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

    def lock(self) -> None:
        """Take ``<journal>.lock`` (non-blocking) and, while a JSON file waits for ``migrate``, the lock an
        earlier version takes on it, so that a daemon of that version still running keeps this one
        out; raise ``StateError`` naming the holder's pid."""
        if self.path is None or self._locks:
            return
        owned = [self.path] + ([self.legacy] if self.legacy is not None and self.legacy.exists() else [])
        try:
            for path in owned:
                self._locks.append(_take_lock(path))
        except StateError:
            self.unlock()
            raise

    def unlock(self) -> None:
        for fh in self._locks:
            with contextlib.suppress(OSError):
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()
        self._locks = []


def _guarded(what: str, action: Callable[[], _T]) -> _T:
    """``action()``, with an OS or SQLite failure as one line: ``what``, then why."""
    try:
        return action()
    except (OSError, sqlite3.Error) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise StateError(f"{what}: {why}") from None


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Failures to open or read the journal as one line: bytes that are not the journal this code
    writes are corrupt (never a fresh start), anything else cannot be read."""
    try:
        yield
    except sqlite3.Error as exc:
        if exc.sqlite_errorcode in _NOT_A_JOURNAL:
            raise _corrupt(path, exc) from None
        raise StateError(f"cannot open state file {path}: {exc}") from None
    except OSError as exc:
        raise StateError(f"cannot open state file {path}: {exc.strerror or exc}") from None
    except _BAD_RECORD as exc:
        raise _corrupt(path, exc) from None


def _corrupt(path: Path, exc: BaseException) -> StateError:
    return StateError(f"state file {path} is corrupt ({exc}); inspect it, then move it away to start fresh "
                      "(jobs it lists keep the SiteFactor/ExcNodeList it set until they start)")


def _connect(path: Path) -> sqlite3.Connection:
    """The journal at ``path``, created 0640 with its tables when missing. The connection leaves
    transactions to ``_transaction`` (``isolation_level=None``): a save is one BEGIN ... COMMIT."""
    if not path.exists():
        _create(path)
    db = sqlite3.connect(path, isolation_level=None, timeout=10.0)
    try:
        db.execute("PRAGMA journal_mode = WAL")  # a commit is one append to the log and one fsync
        db.execute("PRAGMA synchronous = FULL")  # ... at every commit: what write-ahead needs
        if db.execute("PRAGMA user_version").fetchone()[0] == 0:
            _create_tables(db)
    except BaseException:
        db.close()
        raise
    return db


def _create(path: Path) -> None:
    """An empty file with the record's permissions (SQLite gives its log files the same), durable in its
    directory: a power loss must not take the journal's name away with the originals in it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o640)
    try:
        os.fchmod(fd, 0o640)  # whatever the umask: the group may read the record
    finally:
        os.close(fd)
    _fsync_dir(path.parent)


def _create_tables(db: sqlite3.Connection) -> None:
    """The tables, in a file that has none yet (ours, created before a crash, or an empty one). A file
    with other tables is some other program's database: corrupt, never written."""
    with _transaction(db):
        if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise ValueError("not an rltune-daemon journal (tables without its format version)")
        for statement in _SCHEMA:
            db.execute(statement)


def _read_journal(db: sqlite3.Connection) -> DaemonState:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version != JOURNAL_FORMAT:
        raise ValueError(f"journal format {version}, expected {JOURNAL_FORMAT}")
    state = DaemonState()
    rows = db.execute("SELECT id, value FROM jobs").fetchall()
    for job_id, text in sorted(rows, key=lambda row: job_order(row[0])):  # the order the JSON file kept
        state.jobs[str(job_id)] = JobRecord.from_json(json.loads(text), str(job_id))
    state.hands_off = {str(k): str(v) for k, v in db.execute("SELECT id, value FROM hands_off")}
    state.demoted_since = {str(k): float(v) for k, v in db.execute("SELECT id, value FROM demoted_since")}
    return state


def _write(db: sqlite3.Connection, diffs: dict[str, _Diff], meta: dict[str, str]) -> None:
    with _transaction(db):
        for table in _TABLES:
            _upsert(db, table, diffs[table].put)
            db.executemany(f"DELETE FROM {table} WHERE id = ?", [(k,) for k in diffs[table].gone])
        _upsert(db, "meta", meta)


def _upsert(db: sqlite3.Connection, table: str, rows: dict[str, Any]) -> None:
    db.executemany(f"INSERT INTO {table} (id, value) VALUES (?, ?) "
                   "ON CONFLICT (id) DO UPDATE SET value = excluded.value", rows.items())


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """All or nothing: any exception (``KeyboardInterrupt`` too) rolls back to the last commit."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:  # after some I/O errors SQLite has rolled back already
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StateError(f"cannot read state file {path}: {exc.strerror or exc}") from None


def _read_legacy(path: Path, text: bytes | None = None) -> DaemonState:
    """An earlier version's JSON state file (format version 1); ``text``: its bytes, when read already."""
    try:
        return DaemonState.from_json(json.loads(_read_bytes(path) if text is None else text))
    except _BAD_RECORD as exc:
        raise _corrupt(path, exc) from None


def _rename_durably(src: Path, dst: Path) -> None:
    os.rename(src, dst)
    _fsync_dir(dst.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _take_lock(owned: Path) -> TextIO:
    """``<owned>.lock``, locked, with this pid in it."""
    lock_path = owned.with_name(owned.name + ".lock")
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
        raise StateError(f"another rltune-daemon (pid {holder}) is using {owned}; stop it first "
                         "(systemctl stop rltune-daemon) or use --dry-run") from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh
