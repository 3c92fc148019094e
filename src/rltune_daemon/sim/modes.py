"""The two ways a planner drives the simulator.

*Daemon mode* is what a real Slurm gets: every ``interval`` seconds the daemon's ``plan()`` runs on a
Snapshot of the simulated cluster and its Plan is applied exactly as the Slurm applier applies it:
SiteFactors on top of Slurm's multifactor priority, ReqNodeList hints that expire after
``hint_cycles`` cycles. Between cycles the simulated Slurm schedules by ``multifactor + SiteFactor`` and
new arrivals have SiteFactor 0. With ``react`` > 0 the daemon also checks the queue every ``react``
seconds and starts a cycle at once when a job arrived, started or finished (the daemon's queue
watch). A cycle with no arrival, start or finish since the last plan keeps that plan (nothing a plan
looks at changed, but the clock).

*Event mode* is the paper's simulator: the policy ranks the queue at every scheduling pass and the
placer chooses nodes for the top-K jobs of that pass.
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.arrays import I64, B
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.domain.snapshot import PendingState
from rltune_daemon.placement.allocate import Allocation, FreeView, fits
from rltune_daemon.placement.context import PlacementContext, Placer
from rltune_daemon.placement.greedy import greedy_placer
from rltune_daemon.planner.config import PlannerConfig
from rltune_daemon.planner.plan import PlannerMemory, plan
from rltune_daemon.policies.base import Policy, QueueView
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.sim.controller import Controller, tiered_order
from rltune_daemon.sim.engine import Simulator


class DaemonModeController(Controller):
    def __init__(self, policy: Policy, config: PlannerConfig | None = None, placer: Placer | None = None,
                 interval: float = 60.0, hint_cycles: int = 2, base: Multifactor | None = None,
                 react: float = 0.0, leave_order: bool = False) -> None:
        self.policy = policy
        self.leave_order = leave_order  # write no SiteFactor, hints only (``leaves_slurm_order``)
        self.name = policy.name
        self.cfg = config or PlannerConfig()
        self.placer = placer or greedy_placer
        self.full_interval = interval
        self.react = react if 0 < react < interval else 0.0
        self.interval = self.react or interval  # the engine ticks at the queue-check period
        self._last_cycle = -np.inf
        self.hint_cycles = hint_cycles
        self.base = base or Multifactor()
        self.memory = PlannerMemory()
        self.site: dict[int, int] = {}
        self.hint_expiry: dict[int, int] = {}
        self.cycles = 0
        self._seen: tuple[int, int, int] = (-1, -1, -1)
        self.plans = 0

    def base_priority(self, sim: Simulator, rows: I64) -> I64:
        view = QueueView(sim.table, rows, sim.now, sim.cl, sim.usage)
        return self.base.priority(view).astype(np.int64)

    def order(self, sim: Simulator, pending: I64) -> I64:
        prio = self.base_priority(sim, pending)
        site = np.fromiter((self.site.get(int(r), 0) for r in pending), dtype=np.int64, count=len(pending))
        return tiered_order(sim, pending, -(np.maximum(prio + site, 1)).astype(np.float64))

    def on_tick(self, sim: Simulator) -> None:
        seen = (sim.stats["arrived"], sim.stats["started"], sim.stats["finished"])
        changed = seen != self._seen
        if not changed and sim.now - self._last_cycle < self.full_interval - 1e-6:
            return  # a queue check that saw nothing new: no cycle
        self._last_cycle = sim.now
        self.cycles += 1
        for row, expiry in list(self.hint_expiry.items()):
            if self.cycles >= expiry:
                sim.clear_hint(row)
                del self.hint_expiry[row]
        if not changed:
            return
        self._seen = seen
        rows = sim.pending_rows()
        if not len(rows):
            return
        prio = self.base_priority(sim, rows)
        states = [PendingState(priority=int(max(p + self.site.get(int(r), 0), 1)),
                               site_factor=self.site.get(int(r), 0)) for r, p in zip(rows, prio, strict=True)]
        result = plan(sim.snapshot(states), self.policy, self.cfg, self.memory, self.placer)
        self.plans += 1
        index = {sim.table.ids[int(r)]: int(r) for r in rows}
        names = {n: i for i, n in enumerate(sim.cl.names)}
        for entry in result.entries:
            row = index[entry.job_id]
            if not self.leave_order:
                self.site[row] = entry.site_factor
            if entry.placement.is_hint:
                sim.set_hint(row, np.array([names[n] for n in entry.placement.nodes], dtype=np.int64))
                self.hint_expiry[row] = self.cycles + self.hint_cycles

    def on_start(self, sim: Simulator, row: int) -> None:
        self.site.pop(row, None)
        self.hint_expiry.pop(row, None)

    def on_finish(self, sim: Simulator, row: int, runtime: float) -> None:
        self.policy.observe_finish(sim.table, row, runtime)


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

    def order(self, sim: Simulator, pending: I64) -> I64:
        view = QueueView(sim.table, pending, sim.now, sim.cl, sim.usage)
        ordered = tiered_order(sim, pending, self.policy.scores(view))
        free = FreeView(sim.cl.gpus_free, sim.cl.cpus_free, sim.cl.mem_free)
        top = [int(r) for r in ordered[: self.top_k] if fits(sim.cl, sim.elig, sim.shapes, int(r), free)]
        self.chosen = {}
        if top:
            ctx = PlacementContext(sim.table, sim.shapes, sim.cl, sim.elig, self.cfg.effects)
            self.chosen = self.placer(ctx, np.array(top, dtype=np.int64)).allocations
        return ordered

    def placement(self, sim: Simulator, row: int) -> tuple[PlacementKind, B | None]:
        alloc = self.chosen.get(row)
        if alloc is None:
            return PlacementKind.PACK, None
        mask = np.zeros(sim.cl.n_nodes, dtype=np.bool_)
        mask[alloc.nodes] = True
        return alloc.kind, mask

    def on_finish(self, sim: Simulator, row: int, runtime: float) -> None:
        self.policy.observe_finish(sim.table, row, runtime)


def default_placer() -> Placer:
    """The MILP placer when the placement module provides it, else Slurm's greedy default."""
    try:
        from rltune_daemon.placement.milp import make_milp_placer
    except ModuleNotFoundError:
        return greedy_placer
    return make_milp_placer()


def planner_controller(policy: Policy, mode: str, placement: bool = True, placer: Placer | None = None,
                       config: PlannerConfig | None = None, interval: float = 60.0,
                       react: float = 0.0, leave_order: bool = False) -> Controller:
    """A controller running ``policy`` in ``daemon`` mode (re-planned every ``interval`` seconds, and
    within ``react`` seconds of a queue change when ``react`` > 0) or ``event`` mode; ``placement``
    False keeps Slurm's own placement (no hints), as in training and in the paper's naive ablation.
    ``leave_order``: daemon mode writes no SiteFactor, as the daemon with no model and ``multifactor``."""
    cfg = config or PlannerConfig(placement=placement)
    if not placement:
        cfg = PlannerConfig(**{**cfg.__dict__, "placement": False})
    if mode == "daemon":
        return DaemonModeController(policy, cfg, placer or (default_placer() if placement else greedy_placer),
                                    interval=interval, react=react, leave_order=leave_order)
    if mode == "event":
        if not placement:
            from rltune_daemon.sim.controller import PolicyController

            return PolicyController(policy)
        return EventModeController(policy, placer or default_placer(), cfg.top_k, cfg)
    raise ValueError(f"mode must be 'daemon' or 'event', got {mode!r}")
