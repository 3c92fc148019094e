"""When is a read suspect: two sources that disagree beyond churn, a drop Slurm does not confirm, a
job the daemon changed that the read missed. Plus the confirmation call on fake clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from rltune_daemon.domain.updates import Fate
from rltune_daemon.slurm.errors import SuspectRead
from rltune_daemon.slurm.integrity import (
    ReadLimits,
    check_alive,
    check_drop,
    check_sprio,
    check_sprio_covers,
    check_tres,
    fate_of,
    vanished_sample,
)
from rltune_daemon.slurm.reader import SlurmReader
from rltune_daemon.slurm.runner import SlurmRunner

L = ReadLimits()


def _ids(n: int, start: int = 1) -> set[str]:
    return {str(i) for i in range(start, start + n)}


def test_sprio_and_squeue_may_differ_by_churn_only() -> None:
    check_sprio(_ids(100), _ids(97, 4), L)  # 3 jobs ended between the calls: fine
    with pytest.raises(SuspectRead, match="sprio lists 4 pending job") as err:
        check_sprio(_ids(100), _ids(96, 5), L)
    assert err.value.reason == "sprio_mismatch"
    check_sprio(_ids(1000), _ids(990, 11), L)  # 1 % of a big queue
    check_sprio_covers(_ids(50), _ids(48), L)
    with pytest.raises(SuspectRead, match="eligible pending"):
        check_sprio_covers(_ids(50), set(), L)  # sprio printed nothing with exit 0
    with pytest.raises(SuspectRead) as err:
        check_tres(_ids(10), set(), L)
    assert err.value.reason == "tres_mismatch"


def test_a_big_drop_stands_only_when_slurm_confirms_the_vanished_jobs_ended() -> None:
    before, after = _ids(100), _ids(30)
    sample = vanished_sample(before, after, L)
    assert len(sample) == L.drop_sample and set(sample) <= before - after
    assert vanished_sample(before, _ids(60), L) == []  # 40 % gone: ordinary
    assert vanished_sample(_ids(10), set(), L) == []  # too small a queue to judge
    check_drop(sample, {j: Fate("ended", "COMPLETED") for j in sample}, 100, 30)
    check_drop(sample, {j: Fate("gone") for j in sample}, 100, 30)
    with pytest.raises(SuspectRead, match="still lists 1 of"):
        fates = {j: Fate("ended") for j in sample} | {sample[0]: Fate("alive", "PENDING")}
        check_drop(sample, fates, 100, 30)
    with pytest.raises(SuspectRead, match="confirms only"):
        check_drop(sample, {}, 100, 30)


def test_fates() -> None:
    assert fate_of("COMPLETED").over and fate_of("CANCELLED").over and fate_of("OUT_OF_MEMORY").over
    assert fate_of("PENDING").kind == "alive" and not fate_of("RUNNING").over
    assert fate_of("SUSPENDED").kind == "other" and not fate_of("COMPLETING").over
    assert not Fate("unknown").over and Fate("gone").over
    check_alive({"1": Fate("ended"), "2": Fate("other", "SUSPENDED")})
    with pytest.raises(SuspectRead) as err:
        check_alive({"1": Fate("alive", "PENDING")})
    assert err.value.reason == "vanished_alive"
    with pytest.raises(ValueError):
        SuspectRead("made-up", "x")


def _fake_squeue(path: Path, batch: str, single_err: str) -> Path:
    """squeue that prints ``batch`` for several ids and, for one id, nothing plus ``single_err``, rc 1."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "batch.out").write_text(batch)
    (path / "single.err").write_text(single_err)
    (path / "calls").write_text("")
    script = path / "squeue"
    script.write_text(f"""#!/bin/bash
echo "$*" >> {path}/calls
case " $* " in *" -j "*,*) cat {path}/batch.out; exit 0;; esac
cat {path}/single.err >&2; exit 1
""")
    script.chmod(0o755)
    return path


def test_confirm_asks_once_for_all_then_one_by_one(tmp_path: Path, captured: Path,
                                                   meta: dict[str, str]) -> None:
    """Several ids: the states Slurm lists; one id at a time: "Invalid job id" means gone, anything
    else (no answer, an error) stays unknown."""
    batch = (captured / "confirm.txt").read_text()  # done: COMPLETED, pd_typed: PENDING, 999999: absent
    bin_dir = _fake_squeue(tmp_path / "a", batch, (captured / "confirm_invalid.stderr").read_text())
    reader = SlurmReader(SlurmRunner(bin_dir=str(bin_dir)))
    fates = reader.confirm([meta["done"], meta["pd_typed"], "999999"])
    assert fates[meta["done"]] == Fate("ended", "COMPLETED")
    assert fates[meta["pd_typed"]] == Fate("alive", "PENDING")
    assert fates["999999"].kind == "gone"
    assert len((bin_dir / "calls").read_text().splitlines()) == 2  # one batch, one single check
    # one id alone that Slurm no longer knows: squeue fails with "Invalid job id" (captured): gone, not
    # an error that would stop every cycle from forgetting the job
    bin_dir = _fake_squeue(tmp_path / "c", "", (captured / "confirm_invalid.stderr").read_text())
    assert SlurmReader(SlurmRunner(bin_dir=str(bin_dir))).confirm(["999999"], single=False) == {
        "999999": Fate("gone")}
    bin_dir = _fake_squeue(tmp_path / "b", "", "slurm_load_jobs error: Socket timed out on send/recv\n")
    reader = SlurmReader(SlurmRunner(bin_dir=str(bin_dir)))
    assert reader.confirm(["999999", "5"])["999999"].kind == "unknown"  # an error is not evidence
    assert reader.confirm(["999999", "5"], single=False)["999999"].kind == "unknown"
