"""How the simulator asks "which job next, and where?": one small interface for heuristics, the
learned policy (event mode) and the daemon's planner (daemon mode)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, B
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.policies.base import Policy

if TYPE_CHECKING:
    from rltune_daemon.sim.view import SimView


class Controller:
    """Decides the start order at each scheduling pass and, optionally, placements.

    ``static`` controllers give every job a fixed key at arrival (``static_keys``) and the engine keeps
    the queue sorted incrementally; others are asked for a fresh ``order`` at each pass. ``interval``
    (seconds) makes the engine call ``on_tick`` periodically, as the daemon's cycle does. Controllers
    that override ``placement`` must set ``default_placement = False``. Every callback gets the
    simulator's ``SimView``: what a controller may read and do, nothing more.
    """

    name: str = "controller"
    static: bool = False
    interval: float | None = None
    default_placement: bool = True  # False when ``placement`` is overridden to choose per job
    external: bool = False  # True: the order comes from outside, through ``Simulator.iterate()``

    def static_keys(self, sim: SimView, rows: I64) -> F64:
        raise NotImplementedError

    def order(self, sim: SimView, pending: I64) -> I64:
        """``pending`` rows sorted into start order (highest priority first)."""
        raise NotImplementedError(f"{type(self).__name__} must implement order() or be external")

    def placement(self, sim: SimView, row: int) -> tuple[PlacementKind, B | None]:
        """Placement style for a job about to start and an optional node mask it must use."""
        return PlacementKind.PACK, None

    def on_tick(self, sim: SimView) -> None:
        """Periodic decision point (``interval``)."""

    def on_start(self, sim: SimView, row: int) -> None:
        """A job started."""

    def on_finish(self, sim: SimView, row: int, runtime: float) -> None:
        """A job finished after ``runtime`` seconds."""


def tiered_order(sim: SimView, pending: I64, scores: F64) -> I64:
    """Slurm's order: higher PriorityTier first, then score (lower first), then submit order."""
    tier = sim.table.tier[pending]
    return pending[np.lexsort((pending, scores, -tier))]


class PolicyController(Controller):
    """A priority policy scored at every pass (event mode); Slurm's default placement (pack)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.name = policy.name
        self.static = policy.static

    def view(self, sim: SimView, rows: I64) -> QueueView:
        return sim.queue_view(rows)

    def static_keys(self, sim: SimView, rows: I64) -> F64:
        return self.policy.scores(self.view(sim, rows))

    def order(self, sim: SimView, pending: I64) -> I64:
        return tiered_order(sim, pending, self.policy.scores(self.view(sim, pending)))

    def on_finish(self, sim: SimView, row: int, runtime: float) -> None:
        self.policy.observe_finish(sim.table, row, runtime)
