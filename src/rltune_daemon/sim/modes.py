"""Event mode, the paper's simulator: the policy ranks the queue at every scheduling pass and the
placer chooses nodes for the top-K jobs of that pass. (Daemon mode, what a real Slurm gets, runs the
daemon's own cycle against the simulated Slurm: ``sim.daemon``.)
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.arrays import I64, B
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.placement.allocate import Allocation
from rltune_daemon.placement.context import Placer
from rltune_daemon.placement.greedy import greedy_placer
from rltune_daemon.planner.config import PlannerConfig
from rltune_daemon.policies.base import Policy
from rltune_daemon.sim.controller import Controller, tiered_order
from rltune_daemon.sim.view import SimView


class EventModeController(Controller):
    default_placement = False

    def __init__(self, policy: Policy, placer: Placer | None = None, top_k: int = 16,
                 config: PlannerConfig | None = None) -> None:
        self.policy = policy
        self.name = policy.name
        self.placer = placer or greedy_placer
        self.top_k = top_k
        self.cfg = config or PlannerConfig()
        self.chosen: dict[int, Allocation] = {}

    def order(self, sim: SimView, pending: I64) -> I64:
        ordered = tiered_order(sim, pending, self.policy.scores(sim.queue_view(pending)))
        free = sim.free_now()
        top = [int(r) for r in ordered[: self.top_k] if sim.fits_now(int(r), free)]
        self.chosen = {}
        if top:
            ctx = sim.placement_context(self.cfg.effects)
            self.chosen = self.placer(ctx, np.array(top, dtype=np.int64)).allocations
        return ordered

    def placement(self, sim: SimView, row: int) -> tuple[PlacementKind, B | None]:
        alloc = self.chosen.get(row)
        if alloc is None:
            return PlacementKind.PACK, None
        mask = np.zeros(sim.n_nodes, dtype=np.bool_)
        mask[alloc.nodes] = True
        return alloc.kind, mask

    def on_finish(self, sim: SimView, row: int, runtime: float) -> None:
        self.policy.observe_finish(sim.table, row, runtime)


def default_placer() -> Placer:
    """The MILP placer when the placement module provides it, else Slurm's greedy default."""
    try:
        from rltune_daemon.placement.milp import make_milp_placer
    except ModuleNotFoundError:
        return greedy_placer
    return make_milp_placer()
