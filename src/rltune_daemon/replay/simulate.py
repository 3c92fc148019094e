"""The simulator's side of a replay: the same window, cluster, limits and arms, with what makes the
simulated Slurm this Slurm: the cluster's own multifactor (``priority.cluster_weights``), a reservation
for every blocked job (``bf_reservations`` = Slurm's bf_max_job_test), and no placement effects
(``sleep`` jobs do not slow each other down). A daemon arm is ``rltune evaluate``'s daemon mode with
the daemon's unscaled interval and react."""

from __future__ import annotations

from typing import Any

from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.evaluate.runner import EvalConfig, make_controller
from rltune_daemon.planner.config import INTERVAL_DEFAULT, REACT_DEFAULT
from rltune_daemon.policies.multifactor import Multifactor, MultifactorWeights
from rltune_daemon.replay.arms import Arm
from rltune_daemon.replay.window import ReplayWindow
from rltune_daemon.sim.config import SLURM_RESERVATIONS, SimConfig
from rltune_daemon.sim.controller import Controller, PolicyController
from rltune_daemon.sim.daemon import DaemonModeController
from rltune_daemon.sim.engine import SimResult, Simulator

PASSES = ("events", "grid", "main+grid")


def sim_config(pass_period: float = 0.0, passes: str = "grid") -> SimConfig:
    """Slurm-like reservations, no placement effects, and the scheduling passes ``passes`` names:
    ``events``: a full pass at every event (as ``rltune evaluate``); ``grid``: full passes only every
    ``pass_period`` trace seconds (the cluster's bf_interval times the speedup: Slurm's backfill thread);
    ``main+grid``: that, plus Slurm's main scheduler (priority order, no backfill) at every event."""
    if passes not in PASSES:
        raise ValueError(f"passes must be one of {PASSES}, got {passes!r}")
    return SimConfig(effects=EffectsConfig.pure(), bf_reservations=SLURM_RESERVATIONS,
                     pass_period=0.0 if passes == "events" else pass_period,
                     main_at_events=passes == "main+grid")


def controller(arm: Arm, win: ReplayWindow, weights: MultifactorWeights, trace: str,
               cycle: tuple[float, float] = (INTERVAL_DEFAULT, REACT_DEFAULT)) -> Controller:
    """``cycle``: the daemon's (interval, react) in trace seconds, as the real arm ran it."""
    base = Multifactor(weights)
    if not arm.uses_daemon:
        return PolicyController(base)
    interval, react = cycle
    cfg = EvalConfig(trace=trace, policies=(arm.sim_spec,), windows=1, window_size=len(win.window.jobs),
                     seed=win.seed, mode="daemon", pure=True, interval=interval, react=react,
                     milp=arm.hints, bf_reservations=SLURM_RESERVATIONS, reorder=arm.reorder)
    ctl = make_controller(arm.sim_spec, win.train, cfg)
    set_base(ctl, base)
    return ctl


def set_base(ctl: Controller, base: Multifactor) -> None:
    """Give a daemon-mode controller this cluster's multifactor: its simulated Slurm adds the daemon's
    SiteFactors to a base priority that ``make_controller`` leaves at the evaluation's default formula."""
    if not isinstance(ctl, DaemonModeController):
        raise RuntimeError(f"{type(ctl).__name__} is not a daemon-mode controller: the replay cannot give "
                           "its simulated daemon the cluster's own priority")
    ctl.slurm.base = base


def simulate(arm: Arm, win: ReplayWindow, weights: MultifactorWeights, trace: str, pass_period: float = 0.0,
             cycle: tuple[float, float] = (INTERVAL_DEFAULT, REACT_DEFAULT), passes: str = "grid"
             ) -> SimResult:
    ctl = controller(arm, win, weights, trace, cycle)
    return Simulator(win.window, ctl, sim_config(pass_period, passes)).run()


def describe(cycle: tuple[float, float] = (INTERVAL_DEFAULT, REACT_DEFAULT)) -> dict[str, Any]:
    return {"bf_reservations": SLURM_RESERVATIONS, "effects": "pure", "interval": cycle[0],
            "react": cycle[1]}
