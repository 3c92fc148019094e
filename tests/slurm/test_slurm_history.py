"""Finished runs from sacct (``slurm.history``): parsing captured real output, incremental reads that
never return a run twice, failures that keep the cursor, and a real Slurm with slurmdbd."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from fakebin import FakeBin

from rltune_daemon.formats.slurm import parse_timestamp
from rltune_daemon.slurm.errors import ParseError, SlurmCommandError
from rltune_daemon.slurm.history import OVERLAP_S, SacctHistory, parse_history, sacct_time
from rltune_daemon.slurm.runner import SlurmRunner
from slurm_fixtures import TEST_USER, SlurmTestCluster

SACCT = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "sacct_testbed.txt"
HEADER = "JobID|User|Submit|Start|End|ReqTRES|AllocTRES|Timelimit|State"


def _line(job: str, user: str, gpus: int, start: str, end: str) -> str:
    return f"{job}|{user}|{start}|{start}|{end}|cpu=1,gres/gpu={gpus},node=1||00:30:00|COMPLETED"


def test_parse_captured_sacct_keeps_runs_that_started() -> None:
    """Real 22.05 output (slurm-lab, slurmdbd): jobs cancelled while pending (Start None) never ran."""
    text = SACCT.read_text()
    runs = parse_history(text)
    started = [ln.split("|") for ln in text.splitlines()[1:] if ln.split("|")[5] != "None"]
    assert list(runs.ids) == [c[0] for c in started]
    assert list(runs.users) == [c[1] for c in started]
    first = started[0]
    start, end = parse_timestamp(first[5]), parse_timestamp(first[6])
    assert start is not None and end is not None
    assert runs.runtime[0] == end - start and runs.end[0] == end
    assert int(runs.gpus[0]) == 4  # gres/gpu=4 of ReqTRES
    assert len(parse_history("")) == 0


def test_parse_refuses_output_without_the_needed_columns() -> None:
    with pytest.raises(ParseError, match="header lacks"):
        parse_history("JobID|User\n1|root\n")


def _history(tmp_path: Path, out: str, days: float = 14.0) -> tuple[SacctHistory, FakeBin]:
    fake = FakeBin(tmp_path / "bin")
    fake.add("sacct", out)
    return SacctHistory(SlurmRunner(bin_dir=str(fake.path), max_calls_per_cycle=100), days), fake


def _since(call: str) -> float:
    words = call.split()
    value = parse_timestamp(words[words.index("-S") + 1])
    assert value is not None
    return value


def test_reads_are_incremental_and_never_return_a_run_twice(tmp_path: Path) -> None:
    now = time.time()
    t = [sacct_time(now - s) for s in (300, 200, 100)]
    hist, fake = _history(tmp_path, "\n".join([HEADER, _line("1", "ann", 1, t[0], t[1])]) + "\n")
    first = hist.read(now)
    assert list(first.ids) == ["1"]
    assert abs(_since(fake.calls()[-1]) - (now - 14 * 86400)) <= 1  # the look-back
    assert len(hist.read(now + 60)) == 0  # the overlap returns job 1 again: dropped
    assert abs(_since(fake.calls()[-1]) - (now - OVERLAP_S)) <= 1  # asks only since the last read
    fake.add("sacct", "\n".join([HEADER, _line("1", "ann", 1, t[0], t[1]), _line("2", "bob", 2, t[1], t[2])]))
    assert list(hist.read(now + 120).ids) == ["2"]
    hist.rewind()
    assert list(hist.read(now + 180).ids) == ["1", "2"]  # a new policy gets everything again
    assert abs(_since(fake.calls()[-1]) - (now + 180 - 14 * 86400)) <= 1


def test_a_failed_read_raises_and_keeps_the_cursor(tmp_path: Path) -> None:
    now = time.time()
    hist, fake = _history(tmp_path, "")
    fake.add("sacct", stderr="sacct: error: Slurm accounting storage is disabled", rc=1)
    with pytest.raises(SlurmCommandError, match="accounting storage is disabled"):
        hist.read(now)
    assert hist.since is None  # the next read still looks back the whole period
    fake.add("sacct", HEADER + "\n")
    assert len(hist.read(now + 600)) == 0
    assert abs(_since(fake.calls()[-1]) - (now + 600 - 14 * 86400)) <= 1


@pytest.mark.slurm
def test_real_sacct_returns_each_finished_run_once(slurmdbd_cluster: SlurmTestCluster) -> None:
    """slurmdbd records the runs; the reader sees users, GPU counts and runtimes, and each run once."""
    c = slurmdbd_cluster
    c.cancel_all()
    hist = SacctHistory(c.runner(), days=1)
    hist.read()  # whatever earlier tests left
    ids = [c.submit("--gres=gpu:1", "-t", "5", wrap="sleep 1"),
           c.submit("--gres=gpu:2", "-t", "5", wrap="sleep 2", user=TEST_USER)]
    got: dict[str, tuple[str, int, float]] = {}

    def ended() -> bool:
        runs = hist.read()
        got.update({i: (u, int(g), float(r)) for i, u, g, r in
                    zip(runs.ids, runs.users, runs.gpus, runs.runtime, strict=True)})
        return set(ids) <= set(got)

    c.wait_for(ended, 40, "both runs in sacct")
    assert got[ids[0]][:2] == ("root", 1) and got[ids[1]][:2] == (TEST_USER, 2)
    assert 1 <= got[ids[0]][2] <= 10 and 2 <= got[ids[1]][2] <= 10
    assert not set(hist.read().ids) & set(ids)  # never twice
    assert np.all(np.isfinite(list(r for _, _, r in got.values())))
