"""State file: round trip, atomic replace, corrupt files refused (not silently reset), single writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rltune_daemon.core.record import DaemonState, FieldChange, JobRecord
from rltune_daemon.service.statefile import StateError, StateFile


def _state() -> DaemonState:
    s = DaemonState()
    s.jobs["12"] = JobRecord({"site_factor": FieldChange(0, 40, 0, 1.0, 2.0, True),
                              "exc_nodes": FieldChange((), ("k80-1", "m40-1"), (), 1.0, 2.0, False)},
                             hint_age=1, hint_nodes=("p100-2",))
    s.hands_off["13"] = "SiteFactor set outside rltune-daemon"
    s.demoted_since["14"] = 123.5
    return s


def test_round_trip_and_every_change_recorded(tmp_path: Path) -> None:
    sf = StateFile(tmp_path / "sub" / "state.json")
    sf.save(_state())
    data = json.loads((tmp_path / "sub" / "state.json").read_text())
    site = data["jobs"]["12"]["fields"]["site_factor"]
    assert (site["original"], site["value"], site["first_set"], site["last_set"]) == (0, 40, 1.0, 2.0)
    back = sf.load()
    assert back.jobs["12"].fields["exc_nodes"].value == ("k80-1", "m40-1")
    assert back.jobs["12"].hint_nodes == ("p100-2",) and back.hands_off == {"13": _state().hands_off["13"]}
    assert back.demoted_since == {"14": 123.5}
    assert oct(os.stat(tmp_path / "sub" / "state.json").st_mode & 0o777) == "0o640"
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["state.json"]  # no temp files left


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
    before = (tmp_path / "state.json").read_text()

    def boom(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(StateError, match="No space left"):
        sf.save(DaemonState())
    assert (tmp_path / "state.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


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
