"""Episode windows over one trace (as always: index = first job) or several (each drawn equally often)."""

from __future__ import annotations

import numpy as np
import pytest

from rltune_daemon.errors import UserError
from rltune_daemon.traces import load_workload, split_by_time
from rltune_daemon.train.episodes import BLOCK, Episodes, episode_workload, trace_names


def _part(jobs: int, seed: int = 0):  # type: ignore[no-untyped-def]
    return split_by_time(load_workload("testbed", estimates="user", seed=seed, jobs=str(jobs)))[0]


def test_one_trace_keeps_the_index_as_the_first_job() -> None:
    part = _part(1000)
    eps = Episodes(["testbed"], [part], 100)
    assert eps.n_starts == len(part.jobs) - 100
    for start in (0, 17, eps.n_starts - 1):
        wl = eps.workload(start)
        assert [j.id for j in wl.jobs] == [j.id for j in episode_workload(part, start, 100).jobs]


def test_several_traces_are_drawn_equally_often_and_map_inside_each_part() -> None:
    small, large = _part(600, seed=1), _part(3000, seed=2)
    eps = Episodes(["small", "large"], [small, large], 100)
    assert eps.n_starts == 2 * BLOCK
    draws = np.random.default_rng(0).integers(0, eps.n_starts, 4000)
    which = np.array([eps.locate(int(s))[0] for s in draws])
    assert abs(which.mean() - 0.5) < 0.03  # not 5:1 as their lengths are
    for start in (0, BLOCK - 1, BLOCK, 2 * BLOCK - 1):
        i, s = eps.locate(start)
        part = (small, large)[i]
        assert 0 <= s <= len(part.jobs) - 100
        assert [j.id for j in eps.workload(start).jobs] == [j.id for j in part.jobs[s : s + 100]]
    assert eps.locate(2 * BLOCK - 1)[1] == len(large.jobs) - 101  # the last block ends at the last start


def test_names_and_a_too_short_part() -> None:
    assert trace_names("philly, helios,philly,,testbed") == ["philly", "helios", "testbed"]
    with pytest.raises(UserError, match="fewer than one episode"):
        Episodes(["tiny"], [_part(600)], 10_000)


def test_several_traces_refuse_options_meant_for_one(capsys: pytest.CaptureFixture[str]) -> None:
    from rltune_daemon.cli.main import main

    assert main(["train", "--trace", "testbed,helios", "--opt", "jobs=2000", "--out", "/tmp/none"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--opt and --cluster go with one trace" in err
