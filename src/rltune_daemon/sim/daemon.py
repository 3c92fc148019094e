"""Offline daemon mode: the daemon's own decision and write path against the simulated Slurm.

Every ``interval`` seconds (and, with ``react`` > 0, at a queue check every ``react`` seconds that sees a
job arrive, start or end) the engine's tick runs one daemon cycle, ``core.cycle.run_cycle``: the live
daemon's own function, on the ``SimulatedSlurm`` (whose writes go through the Slurm writer's own
validation). Between cycles the simulated Slurm schedules by multifactor + SiteFactor and honours
ExcNodeList hints. ``rltune-daemon --backend sim`` runs the same ``SimulatedSlurm`` and the same cycle
on the same tick grid, so both give the same schedule.
"""

from __future__ import annotations

from rltune_daemon.core.applier import Applier
from rltune_daemon.core.cycle import Core, Strict, run_cycle
from rltune_daemon.core.record import DaemonState
from rltune_daemon.core.steer import MAX_UPDATES_DEFAULT
from rltune_daemon.domain import Plan, Snapshot
from rltune_daemon.domain.arrays import I64
from rltune_daemon.placement.context import Placer
from rltune_daemon.placement.greedy import greedy_placer
from rltune_daemon.planner.config import PlannerConfig
from rltune_daemon.planner.plan import PlannerMemory, plan
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.sim.controller import Controller, PolicyController
from rltune_daemon.sim.modes import EventModeController, default_placer
from rltune_daemon.sim.slurm import SimulatedSlurm
from rltune_daemon.sim.view import SimView

STRICT = Strict()


class DaemonModeController(Controller):
    """The daemon's cycle at the engine's ticks (module docstring). ``leave_order``: write no SiteFactor
    (the daemon with the ``multifactor`` base policy: Slurm's own order plus hints)."""

    def __init__(self, policy: Policy, config: PlannerConfig | None = None, placer: Placer | None = None,
                 interval: float = 60.0, hint_cycles: int = 2, base: Multifactor | None = None,
                 react: float = 0.0, leave_order: bool = False,
                 max_updates: int = MAX_UPDATES_DEFAULT) -> None:
        self.policy = policy
        self.name = policy.name
        self.leave_order = leave_order
        self.cfg = config or PlannerConfig()
        self.placer = placer or greedy_placer
        self.full_interval = interval
        self.react = react if 0 < react < interval else 0.0
        self.interval = self.react or interval  # the engine ticks at the queue-check period
        self.slurm = SimulatedSlurm(base, display=False)
        self.core = Core(Applier(hint_cycles, self.cfg.placement), DaemonState(), max_updates)
        self.memory = PlannerMemory(demoted_since=self.core.state.demoted_since)
        self._last_cycle = float("-inf")
        self._seen: tuple[int, int, int] = (-1, -1, -1)
        self.cycles = 0
        self.plans = 0

    def order(self, sim: SimView, pending: I64) -> I64:
        self.slurm.bind(sim)
        return self.slurm.order(pending)

    def on_start(self, sim: SimView, row: int) -> None:
        self.slurm.started(row)

    def on_tick(self, sim: SimView) -> None:
        """A queue check: a cycle when a job arrived, started or ended since the last one, or when
        ``interval`` has passed since it."""
        seen = (sim.stats["arrived"], sim.stats["started"], sim.stats["finished"])
        if seen == self._seen and sim.now - self._last_cycle < self.full_interval - 1e-6:
            return
        self._last_cycle, self._seen = sim.now, seen
        self.slurm.bind(sim)
        self.cycle(sim)

    def _plan(self, snap: Snapshot) -> Plan:
        self.plans += 1
        return plan(snap, self.policy, self.cfg, self.memory, self.placer)

    def cycle(self, sim: SimView) -> None:
        """One daemon cycle: ``core.cycle.run_cycle``, the live daemon's own, with nothing to log or
        save and the simulated clock for the record's timestamps."""
        self.cycles += 1
        run_cycle(self.slurm, self.core, self.policy, self._plan, STRICT, now=lambda: sim.now,
                  leave_order=self.leave_order)


def planner_controller(policy: Policy, mode: str, placement: bool = True, placer: Placer | None = None,
                       config: PlannerConfig | None = None, interval: float = 60.0,
                       react: float = 0.0, leave_order: bool = False, base: Multifactor | None = None
                       ) -> Controller:
    """A controller running ``policy`` in ``daemon`` mode (the daemon's cycle every ``interval`` seconds,
    and within ``react`` seconds of a queue change when ``react`` > 0) or ``event`` mode; ``placement``
    False keeps Slurm's own placement (no hints), as in training and in the paper's naive ablation.
    ``leave_order``: daemon mode writes no SiteFactor, as the daemon with no model and ``multifactor``.
    ``base``: the simulated Slurm's own priority in daemon mode (default: the default formula)."""
    cfg = config or PlannerConfig(placement=placement)
    if not placement:
        cfg = PlannerConfig(**{**cfg.__dict__, "placement": False})
    if mode == "daemon":
        return DaemonModeController(policy, cfg, placer or (default_placer() if placement else greedy_placer),
                                    interval=interval, react=react, leave_order=leave_order, base=base)
    if mode == "event":
        if not placement:
            return PolicyController(policy)
        return EventModeController(policy, placer or default_placer(), cfg.top_k, cfg)
    raise ValueError(f"mode must be 'daemon' or 'event', got {mode!r}")
