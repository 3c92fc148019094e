"""The windows a training run draws its episodes from: the training part of its trace.

Episodes are named by one integer ``start`` everywhere in the trainer (episode lists, the contended
screen, validation, the rollout cache): the episode's first job in the training part.
"""

from __future__ import annotations

from rltune_daemon.domain.history import RunHistory
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import UserError
from rltune_daemon.policies.base import Policy
from rltune_daemon.train.history import EpisodeHistory


def episode_workload(part: Workload, start: int, size: int) -> Workload:
    """The ``size`` jobs of a training part from its job ``start`` on, as one episode."""
    return part.with_jobs(part.jobs[start : start + size], episode_start=start)


class Episodes:
    """Episode windows of ``size`` jobs over the training part of the trace ``name``."""

    def __init__(self, name: str, part: Workload, size: int) -> None:
        if len(part.jobs) < size + 1:
            raise UserError(f"trace {name}: training split has {len(part.jobs)} jobs, fewer than one "
                            f"episode of {size}")
        self.part, self.size = part, size
        self.history_of = EpisodeHistory(part)

    @property
    def n_starts(self) -> int:
        """Episode starts are drawn from ``[0, n_starts)``."""
        return len(self.part.jobs) - self.size

    def workload(self, start: int) -> Workload:
        return episode_workload(self.part, int(start), self.size)

    def history(self, start: int) -> RunHistory:
        """The ``hist_time`` history the episode starts with (``EpisodeHistory.history``)."""
        return self.history_of.history(int(start))

    def prime(self, policy: Policy, start: int) -> Policy:
        """``policy`` given the episode's run history when it learns from runs (QSSF)."""
        return self.history_of.prime(policy, int(start))
