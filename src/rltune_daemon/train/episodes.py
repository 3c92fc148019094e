"""The windows a training run draws its episodes from: the training parts of one trace, or of several
(``rltune train --trace philly,helios,alibaba,testbed``: one model for clusters it has not seen).

Episodes are named by one integer ``start`` everywhere in the trainer (episode lists, the contended
screen, validation, the rollout cache). With one trace it is the episode's first job in the training
part, as it always was, so single-trace runs reproduce exactly. With several, the index is split into
equal blocks of ``BLOCK`` positions, one per trace, and a position maps onto its trace's own starts
proportionally: a uniform draw then picks every trace equally often, whatever its length (Philly's
training part is five times the testbed's). With ``vary_seed`` set, each episode is a randomised variant
of its window (``traces.variants``), drawn from the seed and its ``start``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rltune_daemon.domain.history import RunHistory
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import UserError
from rltune_daemon.policies.base import Policy
from rltune_daemon.traces.variants import apply_variant, draw_variant
from rltune_daemon.train.history import EpisodeHistory

BLOCK = 1_000_000


def episode_workload(part: Workload, start: int, size: int) -> Workload:
    """The ``size`` jobs of a training part from its job ``start`` on, as one episode."""
    return part.with_jobs(part.jobs[start : start + size], episode_start=start)


def trace_names(trace: str) -> list[str]:
    """``--trace``'s comma-separated names, each once, in the order given."""
    return list(dict.fromkeys(t.strip() for t in trace.split(",") if t.strip()))


class Episodes:
    """Episode windows of ``size`` jobs over the training parts of the traces ``names``."""

    def __init__(self, names: Sequence[str], parts: Sequence[Workload], size: int,
                 vary_seed: int | None = None) -> None:
        for name, part in zip(names, parts, strict=True):
            if len(part.jobs) < size + 1:
                raise UserError(f"trace {name}: training split has {len(part.jobs)} jobs, fewer than one "
                                f"episode of {size}")
        self.names, self.parts, self.size = list(names), list(parts), size
        self.vary_seed = vary_seed
        self.histories = [EpisodeHistory(p) for p in parts]
        self.spans = [len(p.jobs) - size for p in parts]

    @property
    def n_starts(self) -> int:
        """Episode starts are drawn from ``[0, n_starts)``."""
        return self.spans[0] if len(self.parts) == 1 else len(self.parts) * BLOCK

    def locate(self, start: int) -> tuple[int, int]:
        """(trace index, first job in its training part) of the episode ``start``."""
        if len(self.parts) == 1:
            return 0, start
        i, pos = divmod(int(start), BLOCK)
        return i, pos * self.spans[i] // BLOCK

    def workload(self, start: int) -> Workload:
        i, s = self.locate(start)
        window = episode_workload(self.parts[i], s, self.size)
        if self.vary_seed is None:
            return window
        return apply_variant(window, draw_variant(self.vary_seed, int(start)))

    def history(self, start: int) -> RunHistory:
        """The ``hist_time`` history the episode starts with (``EpisodeHistory.history``)."""
        i, s = self.locate(start)
        return self.histories[i].history(s)

    def prime(self, policy: Policy, start: int) -> Policy:
        """``policy`` given the episode's run history when it learns from runs (QSSF)."""
        i, s = self.locate(start)
        return self.histories[i].prime(policy, s)
