"""Evaluation windows, as the paper draws them: ``size`` consecutive jobs starting at seeded random
positions in the last ``held_out`` fraction of the trace (by submit time), each simulated from an idle
cluster. Training never sees this tail. Two other parts choose settings and models without looking at
it: ``train`` (anywhere in the training part) and ``train-tail`` (the last ``held_out`` fraction of the
training part, just before the held-out tail: a temporal validation split, as time-series practice
recommends, because a trace's load drifts over time and random training windows were seen to rank
models differently from the held-out tail). Windows at random starts in a short part overlap (30 windows
of 1,024 jobs in Philly's 7,402-job tail share most of their jobs), so their paired standard error
understates the noise; ``train-recent`` lays the windows end to end over the last ``windows x size``
jobs of the training part instead: no job in two windows, the latest regime before the held-out tail.
``all`` draws the windows from the whole trace, for a trace too short to hold a tail out (a site's own
few-week export): nothing is held out, so its numbers describe that trace, not unseen jobs. ``recent``
lays the windows end to end over the last ``windows x size`` jobs of the whole trace, with everything
before them as the history: ``rltune site`` judges a site's latest weeks by what its older weeks teach."""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import UserError
from rltune_daemon.traces import split_by_time


def window_starts(n_jobs: int, windows: int, size: int, seed: int, part: str = "held-out") -> list[int]:
    """Start offsets of the windows inside a ``part`` (held-out or training) of ``n_jobs`` jobs."""
    if n_jobs < size:
        raise UserError(
            f"the {part} part has {n_jobs} jobs, fewer than --window-size {size}: use a smaller window "
            "or a longer trace (for generated traces, the trace option jobs=N)"
        )
    rng = np.random.default_rng(seed)
    return [int(s) for s in rng.integers(0, n_jobs - size + 1, windows)]


PARTS = ("held-out", "train", "train-tail", "train-recent", "all", "recent")


def end_to_end(workload: Workload, windows: int, size: int, label: str) -> tuple[Workload, list[Workload]]:
    """The jobs before the last ``windows x size`` of ``workload``, and those as disjoint windows."""
    n, need = len(workload.jobs), windows * size
    if need >= n:
        raise UserError(f"the {label} has {n} jobs, not more than --windows {windows} x --window-size "
                        f"{size} = {need}: use fewer or smaller windows")
    cut = n - need
    wins = [workload.with_jobs(workload.jobs[s : s + size], window=k, window_start=s)
            for k, s in enumerate(range(cut, n, size))]
    return workload.with_jobs(workload.jobs[:cut]), wins


def heldout_windows(
    workload: Workload, windows: int, size: int, seed: int, held_out: float = 0.1, part: str = "held-out"
) -> tuple[Workload, list[Workload]]:
    """The history policies may learn from and the evaluation windows of ``part``: for ``held-out`` and
    ``train`` the history is the training part; for ``train-tail`` it is the training part before its
    tail, so that the tail plays the held-out tail's role one step earlier; for ``train-recent`` it is
    the training part before the windows (``seed`` plays no part: the windows are not drawn); for ``all``
    the history is the whole trace, windows included, as ``train``'s is the part its windows come from."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    if part == "recent":
        return end_to_end(workload, windows, size, "trace")
    if part == "all":
        starts = window_starts(len(workload.jobs), windows, size, seed, "whole trace")
        wins = [workload.with_jobs(workload.jobs[s : s + size], window=k, window_start=s)
                for k, s in enumerate(starts)]
        return workload, wins
    train, test = split_by_time(workload, held_out)
    if part == "held-out" and len(test.jobs) < size:
        # the default part is the one a short trace fails first: name the way out that keeps the trace
        raise UserError(
            f"the held-out part (last {held_out:.0%}) has {len(test.jobs)} jobs, fewer than --window-size "
            f"{size}: use --split all (windows from the whole trace's {len(workload.jobs)} jobs, none held "
            "out), fewer and smaller windows, or a longer trace (for generated traces, the trace option "
            "jobs=N)"
        )
    if part == "train-recent":
        return end_to_end(train, windows, size, "training part")
    if part == "train":
        test = train
    elif part == "train-tail":
        train, test = split_by_time(train, held_out)
    label = {"held-out": "held-out", "train": "training", "train-tail": "training tail"}[part]
    starts = window_starts(len(test.jobs), windows, size, seed, label)
    wins = [test.with_jobs(test.jobs[s : s + size], window=k, window_start=s) for k, s in enumerate(starts)]
    return train, wins
