"""Train / held-out split by submit time: the held-out jobs are the *latest* ones, so a policy is
evaluated on a future it never saw (a random split would leak the workload's later phases)."""

from __future__ import annotations

import dataclasses

from rltune_daemon.domain.workload import Workload


def split_by_time(workload: Workload, held_out: float = 0.1) -> tuple[Workload, Workload]:
    """(first ``1 - held_out`` of the jobs, last ``held_out``), by submit order.

    The held-out workload is rebased so that its first job submits at 0 (every workload starts from
    an idle cluster at its first submit); ``meta["time_offset"]`` records the shift.
    """
    if not 0.0 < held_out < 1.0:
        raise ValueError(f"held_out must be in (0, 1), got {held_out}")
    n = len(workload.jobs)
    cut = n - round(n * held_out)
    train = workload.with_jobs(workload.jobs[:cut], split="train", held_out=held_out)
    tail = workload.jobs[cut:]
    offset = tail[0].submit if tail else 0.0
    rebased = tuple(dataclasses.replace(j, submit=j.submit - offset) for j in tail)
    test = workload.with_jobs(rebased, split="held_out", held_out=held_out, time_offset=offset)
    return train, test
