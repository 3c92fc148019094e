"""Episode windows over a trace's training part: ``start`` is the window's first job."""

from __future__ import annotations

import pytest

from rltune_daemon.errors import UserError
from rltune_daemon.traces import load_workload, split_by_time
from rltune_daemon.train.episodes import Episodes, episode_workload


def _part(jobs: int, seed: int = 0):  # type: ignore[no-untyped-def]
    return split_by_time(load_workload("testbed", estimates="user", seed=seed, jobs=str(jobs)))[0]


def test_the_index_is_the_first_job() -> None:
    part = _part(1000)
    eps = Episodes("testbed", part, 100)
    assert eps.n_starts == len(part.jobs) - 100
    for start in (0, 17, eps.n_starts - 1):
        wl = eps.workload(start)
        assert [j.id for j in wl.jobs] == [j.id for j in episode_workload(part, start, 100).jobs]
        assert [j.id for j in wl.jobs] == [j.id for j in part.jobs[start : start + 100]]


def test_a_too_short_part_is_refused() -> None:
    with pytest.raises(UserError, match=r"trace tiny: training split has .* fewer than one episode of 10000"):
        Episodes("tiny", _part(600), 10_000)


def test_several_traces_are_one_unknown_trace(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Training takes one trace: a list of them is refused in one line, before any work."""
    from rltune_daemon.cli.main import main

    assert main(["train", "--trace", "testbed,helios", "--out", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "testbed,helios" in err
