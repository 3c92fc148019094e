"""Evaluation windows, as the paper draws them: ``size`` consecutive jobs starting at seeded random
positions in the last ``held_out`` fraction of the trace (by submit time), each simulated from an idle
cluster. Training never sees this tail. ``from_train`` draws the windows from the training part instead:
the place to choose settings (guard, interval) without looking at the held-out tail."""

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
            "or a longer trace (for generated traces, --opt jobs=N)"
        )
    rng = np.random.default_rng(seed)
    return [int(s) for s in rng.integers(0, n_jobs - size + 1, windows)]


def heldout_windows(
    workload: Workload, windows: int, size: int, seed: int, held_out: float = 0.1, from_train: bool = False
) -> tuple[Workload, list[Workload]]:
    """The training part and the evaluation windows of ``workload`` (of its training part if
    ``from_train``)."""
    train, test = split_by_time(workload, held_out)
    if from_train:
        test = train
    starts = window_starts(len(test.jobs), windows, size, seed, "training" if from_train else "held-out")
    wins = [test.with_jobs(test.jobs[s : s + size], window=k, window_start=s) for k, s in enumerate(starts)]
    return train, wins
