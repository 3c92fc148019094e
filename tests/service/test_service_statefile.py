"""State file: round trip, a save writes only what changed, an interrupted save (exception or SIGKILL)
keeps the last commit, corrupt files refused (not silently reset), single writer, migration of the
JSON state file of earlier versions."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from service_helpers import recorded

from rltune_daemon.core.record import DaemonState, FieldChange, JobRecord
from rltune_daemon.service import statefile
from rltune_daemon.service.statefile import StateError, StateFile


def _state() -> DaemonState:
    s = DaemonState()
    s.jobs["12"] = JobRecord({"site_factor": FieldChange(0, 40, 0, 1.0, 2.0, True),
                              "exc_nodes": FieldChange((), ("k80-1", "m40-1"), (), 1.0, 2.0, False)},
                             hint_age=1, hint_nodes=("p100-2",))
    s.hands_off["13"] = "SiteFactor set outside rltune-daemon"
    s.demoted_since["14"] = 123.5
    return s


def _record(path: Path) -> dict[str, Any]:
    """What the state file at ``path`` holds, less the time it was read."""
    data = recorded(path)
    del data["written"]
    return data


def _many(n: int) -> DaemonState:
    s = DaemonState()
    for i in range(n):
        s.jobs[str(1000 + i)] = JobRecord({"site_factor": FieldChange(0, i + 1, 0, 1.0, 2.0, True)})
    return s


def test_round_trip_and_every_change_recorded(tmp_path: Path) -> None:
    sf = StateFile(tmp_path / "sub" / "state.json")
    sf.save(_state())
    data = recorded(tmp_path / "sub" / "state.json")
    site = data["jobs"]["12"]["fields"]["site_factor"]
    assert (site["original"], site["value"], site["first_set"], site["last_set"]) == (0, 40, 1.0, 2.0)
    back = sf.load()
    assert back.jobs["12"].fields["exc_nodes"].value == ("k80-1", "m40-1")
    assert back.jobs["12"].hint_nodes == ("p100-2",) and back.hands_off == {"13": _state().hands_off["13"]}
    assert back.demoted_since == {"14": 123.5}
    assert oct(os.stat(tmp_path / "sub" / "state.db").st_mode & 0o777) == "0o640"
    sf.close()
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["state.db"]  # no temp files left


def test_missing_file_is_an_empty_state_and_memory_mode_writes_nothing(tmp_path: Path) -> None:
    assert StateFile(tmp_path / "none.json").load().jobs == {}
    StateFile(None).save(_state())
    assert StateFile(None).load().jobs == {}


@pytest.mark.parametrize("text", ["{", "[]", '{"version": 99}',
                                  '{"version": 1, "jobs": {"1": {"fields": {"priority": {}}}}}',
                                  '{"version": 1, "jobs": {"1": {"fields": {"site_factor": {"original": "x", '
                                  '"value": 1}}}}}'])
def test_corrupt_file_is_an_error_not_a_fresh_start(tmp_path: Path, text: str) -> None:
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(StateError, match=r"corrupt .*move it away") as err:
        StateFile(path).load()
    assert "\n" not in str(err.value)


def test_unusable_state_directory_fails_early(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StateError, match=r"cannot create state directory .*StateDirectory"):
        StateFile(tmp_path / "file" / "sub" / "state.json").check_writable()


def test_interrupted_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sf = StateFile(tmp_path / "state.json")
    sf.save(_state())
    before = _record(tmp_path / "state.json")
    real_upsert = statefile._upsert

    def boom(db: sqlite3.Connection, table: str, rows: dict[str, object]) -> None:
        if table != "jobs":  # the jobs table is written (its row deleted), then the disk fills up
            raise OSError(28, "No space left on device")
        real_upsert(db, table, rows)

    monkeypatch.setattr(statefile, "_upsert", boom)
    with pytest.raises(StateError, match="No space left"):
        sf.save(DaemonState())
    assert _record(tmp_path / "state.json") == before
    sf.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]


def test_second_writer_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys,time; from pathlib import Path; from rltune_daemon.service.statefile import StateFile;"
         f"s=StateFile(Path({str(path)!r})); s.lock(); print('locked', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(StateError, match=f"pid {holder.pid}"):
            StateFile(path).lock()
    finally:
        holder.kill()
        holder.wait()
    sf = StateFile(path)
    sf.lock()  # free again once the holder is gone
    sf.unlock()


# ---- the journal ---------------------------------------------------------------------------------


def test_a_save_writes_only_the_rows_that_changed(tmp_path: Path) -> None:
    sf = StateFile(tmp_path / "state.db")
    state = _many(1000)
    assert sf.save(state) == 1000
    assert sf.save(state) == 0  # nothing changed: no transaction at all
    for job_id in ("1003", "1500", "1999"):
        state.jobs[job_id].fields["site_factor"].value = 77
    assert sf.save(state) == 3
    del state.jobs["1001"]
    state.hands_off["1002"] = "SiteFactor set outside rltune-daemon"
    state.demoted_since["1004"] = 5.0
    assert sf.save(state) == 3  # one row deleted, one row in each of the two maps
    assert _record(tmp_path / "state.db") == {k: v for k, v in state.to_json().items() if k != "written"}


@pytest.mark.parametrize("attr", [f.name for f in dataclasses.fields(FieldChange)]
                         + [f.name for f in dataclasses.fields(JobRecord) if f.name != "fields"])
def test_every_attribute_of_a_record_is_saved(tmp_path: Path, attr: str) -> None:
    """Change detection reads the record's dataclasses: no attribute can change without a write."""
    sf = StateFile(tmp_path / "state.db")
    state = _state()
    sf.save(state)
    rec = state.jobs["12"]
    target: Any = rec if hasattr(rec, attr) else rec.fields["site_factor"]
    new = {bool: lambda v: not v, int: lambda v: v + 1, float: lambda v: v + 1.5,
           tuple: lambda v: (*v, "m40-1")}[type(getattr(target, attr))]
    setattr(target, attr, new(getattr(target, attr)))
    assert sf.save(state) == 1
    assert _record(tmp_path / "state.db")["jobs"] == state.to_json()["jobs"]


def test_an_interrupted_save_keeps_the_last_commit_and_the_next_save_writes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sf = StateFile(tmp_path / "state.db")
    state = _many(10)
    sf.save(state)
    before = _record(tmp_path / "state.db")
    state.jobs["1003"].fields["site_factor"].value = 77
    del state.jobs["1004"]
    real_write = statefile._write

    def interrupted(db: sqlite3.Connection, diffs: Any, meta: Any) -> None:
        def stop(*_: object) -> None:
            raise KeyboardInterrupt  # after the jobs table was written, inside the transaction

        monkeypatch.setattr(statefile, "_upsert", stop)
        real_write(db, diffs, meta)

    monkeypatch.setattr(statefile, "_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sf.save(state)
    assert _record(tmp_path / "state.db") == before
    monkeypatch.undo()
    assert sf.save(state) == 2  # what the failed save missed is written now
    assert set(_record(tmp_path / "state.db")["jobs"]) == set(state.jobs)


_KILLED_MID_SAVE = """
import os, sys, time
from pathlib import Path
from rltune_daemon.core.record import DaemonState, FieldChange, JobRecord
from rltune_daemon.service import statefile
sf = statefile.StateFile(Path(sys.argv[1]))
state = DaemonState({str(i): JobRecord({"site_factor": FieldChange(0, 1, 0, 1.0, 1.0)}) for i in range(500)})
sf.save(state)
real_upsert = statefile._upsert
def slow(db, table, rows):
    real_upsert(db, table, rows)
    print("inside", flush=True)
    time.sleep(60)
statefile._upsert = slow
for rec in state.jobs.values():
    rec.fields["site_factor"].value = 2
sf.save(state)
"""


def test_sigkill_in_the_middle_of_a_save_keeps_the_last_commit(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_MID_SAVE, str(tmp_path / "state.db")],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "inside"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    jobs = _record(tmp_path / "state.db")["jobs"]
    assert len(jobs) == 500 and {j["fields"]["site_factor"]["value"] for j in jobs.values()} == {1}


def test_the_journal_and_its_log_are_0640_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        StateFile(tmp_path / "state.db").save(_state())
    finally:
        os.umask(old)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in tmp_path.iterdir()}
    assert modes == {"state.db": "0o640", "state.db-wal": "0o640", "state.db-shm": "0o640"}


def _foreign_database(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE t (x)")
        db.commit()


def _bad_row(path: Path) -> None:
    sf = StateFile(path)
    sf.save(_state())
    sf.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE jobs SET value = '[1, 2]'")
        db.commit()


@pytest.mark.parametrize("spoil", [lambda p: p.write_bytes(b"not a database, not at all" * 100),
                                   _foreign_database, _bad_row], ids=["garbage", "foreign", "bad_row"])
def test_a_corrupt_journal_is_an_error_not_a_fresh_start(tmp_path: Path, spoil: Any) -> None:
    path = tmp_path / "state.db"
    spoil(path)
    for action in (lambda sf: sf.load(), lambda sf: sf.save(_state())):
        with pytest.raises(StateError, match=r"state\.db is corrupt .*move it away") as err:
            action(StateFile(path))
        assert "\n" not in str(err.value)


def test_paths_a_configuration_may_name() -> None:
    assert StateFile(Path("/s/state.json")).path == Path("/s/state.db")
    assert StateFile(Path("/s/state.json")).legacy == Path("/s/state.json")
    assert StateFile(Path("/s/state.db")).legacy == Path("/s/state.json")  # the default's
    assert StateFile(Path("/s/record")).path == Path("/s/record")  # any other name: the journal itself,
    assert StateFile(Path("/s/record")).legacy is None  # nothing to migrate


# ---- migration from the JSON state file of earlier versions --------------------------------------


def _legacy(path: Path, state: DaemonState | None = None) -> bytes:
    """The JSON state file an earlier version wrote (format version 1)."""
    text = (json.dumps((state or _state()).to_json(), indent=1, sort_keys=True) + "\n").encode()
    path.write_bytes(text)
    return text


@pytest.mark.parametrize("configured", ["state.json", "state.db"])  # a configured .json, the default
def test_a_json_state_file_is_migrated_once_and_kept(tmp_path: Path, configured: str) -> None:
    text = _legacy(tmp_path / "state.json")
    expected = _record(tmp_path / configured)  # read as it is while not migrated (--dry-run)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    sf = StateFile(tmp_path / configured)
    assert sf.migrate() == tmp_path / "state.json.migrated"
    assert sf.migrate() is None  # a second migration is a no-op
    sf.close()
    assert StateFile(tmp_path / configured).migrate() is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db", "state.json.migrated"]
    assert (tmp_path / "state.json.migrated").read_bytes() == text  # never deleted, never changed
    assert _record(tmp_path / configured) == expected


def test_a_corrupt_json_state_file_is_an_error_and_is_not_renamed(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text('{"version": 1, "jobs": {"1": {"fields": {"priority": {}}}}}')
    with pytest.raises(StateError, match=r"state\.json is corrupt .*move it away") as err:
        StateFile(tmp_path / "state.json").migrate()
    assert "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]  # and no journal was made


def test_an_interrupted_migration_is_finished_by_the_next(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _legacy(tmp_path / "state.json")
    expected = _record(tmp_path / "state.json")

    def crash(src: Path, dst: Path) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(statefile, "_rename_durably", crash)  # imported and committed, not yet renamed
    with pytest.raises(StateError, match=r"cannot rename .*state\.json: Input/output error"):
        StateFile(tmp_path / "state.json").migrate()
    monkeypatch.undo()
    assert StateFile(tmp_path / "state.json").migrate() == tmp_path / "state.json.migrated"
    assert _record(tmp_path / "state.json") == expected


def test_an_empty_journal_beside_a_json_file_is_filled(tmp_path: Path) -> None:
    """The first start made the journal, then died before the import committed."""
    StateFile(tmp_path / "state.db").save(DaemonState())
    _legacy(tmp_path / "state.json")
    assert _record(tmp_path / "state.db")["jobs"] == {}  # the journal is the record once it exists
    assert StateFile(tmp_path / "state.db").migrate() == tmp_path / "state.json.migrated"
    assert _record(tmp_path / "state.db")["jobs"] == _state().to_json()["jobs"]


def test_a_migration_never_guesses_which_record_is_the_real_one(tmp_path: Path) -> None:
    StateFile(tmp_path / "state.db").save(_many(2))
    _legacy(tmp_path / "state.json")
    with pytest.raises(StateError, match=r"state\.db and .*state\.json both hold records"):
        StateFile(tmp_path / "state.db").migrate()
    (tmp_path / "state.db").unlink()
    (tmp_path / "state.json.migrated").write_text("kept from before")
    with pytest.raises(StateError, match=r"state\.json\.migrated exists; move it away"):
        StateFile(tmp_path / "state.db").migrate()
    assert (tmp_path / "state.json").exists()
    assert (tmp_path / "state.json.migrated").read_text() == "kept from before"


def test_an_earlier_version_still_running_on_the_json_file_keeps_the_daemon_out(tmp_path: Path) -> None:
    _legacy(tmp_path / "state.json")
    with open(tmp_path / "state.json.lock", "w", encoding="utf-8") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242\n")
        held.flush()
        with pytest.raises(StateError, match=r"pid 4242\) is using .*state\.json"):
            StateFile(tmp_path / "state.db").lock()
        with open(tmp_path / "state.db.lock", encoding="utf-8") as journal_lock:  # released again
            fcntl.flock(journal_lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def _daemon_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
    env |= {"RLTUNE_STATE_FILE": str(tmp_path / "state.json"), "RLTUNE_METRICS__ENABLED": "false",
            "RLTUNE_SIM__SPEEDUP": "0"}
    return subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", "--backend", "sim", "--once",
                           *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def test_the_daemon_migrates_at_a_live_start_and_a_dry_run_only_reads(tmp_path: Path) -> None:
    _legacy(tmp_path / "state.json")
    res = _daemon_cli(tmp_path, "--dry-run")
    assert res.returncode == 0, res.stderr[-2000:]
    assert '"managed": 1' in res.stderr and "state_migrated" not in res.stderr  # job 12, read as it is
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    res = _daemon_cli(tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    migrated = [json.loads(ln) for ln in res.stderr.splitlines() if '"state_migrated"' in ln]
    assert migrated and migrated[0]["into"] == str(tmp_path / "state.db")
    assert migrated[0]["kept"] == str(tmp_path / "state.json.migrated")
    assert {"state.db", "state.json.migrated"} <= {p.name for p in tmp_path.iterdir()}
    assert not (tmp_path / "state.json").exists() and not (tmp_path / "state.db-wal").exists()  # closed
