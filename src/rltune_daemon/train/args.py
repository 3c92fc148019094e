"""What a training run is told (``TrainArgs``), checked before any work, and the simulator and planner
settings every rollout derives from it.

These live apart from the trainers so that what only reads a run's settings (export and its manifest,
``--init``, ``--config MODEL``) loads neither torch's trainers nor the MILP's solver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rltune_daemon.errors import UserError
from rltune_daemon.planner.config import (
    GUARD_REFERENCES,
    INTERVAL_DEFAULT,
    NEXT_IN_LINE_DEFAULT,
    REORDER_DEFAULT,
    REORDERS,
    STARVATION_REFERENCE_DEFAULT,
    PlannerConfig,
    guard_reference,
    loop_settings,
    reorder_scope,
)
from rltune_daemon.policies import make_policy
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.slurm_priority import site_multifactor
from rltune_daemon.sim.config import SimConfig, checked_reservations

ALGOS = ("ppo", "cem")


@dataclass
class TrainArgs:
    trace: str
    out: Path
    base: str = "sjf"
    minutes: float = 30.0
    seed: int = 0
    mode: str = "daemon"  # daemon | event
    react: float = 0.0  # daemon mode: queue-check period (s) in rollouts; 0 = 60-s cycles only (faster)
    bf_reservations: int = 1  # blocked jobs per partition the simulator's backfill reserves for (1: EASY)
    starvation_reference: str = STARVATION_REFERENCE_DEFAULT  # daemon mode: the guard's reference (rollouts)
    reorder: str = REORDER_DEFAULT  # daemon mode: what the policy may reorder in rollouts (planner.config)
    next_in_line: int = NEXT_IN_LINE_DEFAULT  # daemon mode, size-class: blocked jobs kept in place
    features: str = "sampled"  # sampled | naive
    estimates: str | None = "user"
    opts: dict[str, str] = field(default_factory=dict)
    cluster: str | None = None  # a cluster file for a sacct/CSV trace (evaluate's --cluster)
    slurm_config: str = ""  # a saved `scontrol show config`: the simulated Slurm's priority (evaluate's)
    episode_jobs: int = 256
    episodes_per_iter: int = 16
    workers: int = 0  # 0 = all cores
    lr: float = 1e-3
    clip: float = 0.2
    update_epochs: int = 4
    minibatch: int = 256
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    top_m: int = 16
    max_steps_per_episode: int = 256
    hidden: int = 64  # actor width; 0 = one linear layer (a weighted sum of the inputs)
    algo: str = "ppo"  # ppo | cem (train.cem: cross-entropy search over a linear actor's weights)
    cem_population: int = 12  # cem: candidates per generation (the mean is scored besides)
    cem_episodes: int = 4  # cem: windows per generation, the same for every candidate
    cem_elite: float = 0.25  # cem: share of candidates the next mean and spread are fitted to
    cem_sigma: float = 0.5  # cem: first spread, relative to the mean weight's size
    validate_every: int = 5
    validation_episodes: int = 8
    max_iterations: int = 0  # 0 = until the time budget is spent
    heldout_windows: int = 10
    heldout_window_size: int = 1024
    warm_start_episodes: int = 0  # >0: imitate the base policy on that many episodes before PPO
    init: Path | None = None  # start from this trained model's actor (fine-tuning; train.init_model)
    episodes: str = "all"  # all | contended: train and validate only on windows that queue (harness)
    screen_episodes: int = 128  # episodes = contended: candidate windows simulated under the base policy
    contended_share: float = 0.5  # ... of which the most contended share (by base BSLD) is kept
    progress: bool = True


def checked_algo(algo: str) -> str:
    if algo not in ALGOS:
        raise UserError(f"algo {algo!r}: expected 'ppo' or 'cem'")
    return algo


def check_args(args: TrainArgs) -> None:
    """Refuse settings no trainer can run, each with one line naming the setting."""
    checked_algo(args.algo)
    if args.mode not in ("daemon", "event"):
        raise UserError(f"mode {args.mode!r}: expected 'daemon' or 'event'")
    if args.features not in ("sampled", "naive"):
        raise UserError(f"features {args.features!r}: expected 'sampled' or 'naive'")
    if not args.react >= 0:
        raise UserError(f"react {args.react:g}: must be 0 (off) or a positive number of seconds")
    if args.hidden < 0:
        raise UserError(f"hidden {args.hidden}: expected 0 (a linear scorer) or a positive width")
    if args.episodes not in ("all", "contended"):
        raise UserError(f"episodes {args.episodes!r}: expected 'all' or 'contended'")
    if args.episodes == "contended" and args.screen_episodes < 2:
        raise UserError("screen_episodes must be at least 2 with episodes 'contended'")
    if args.init is not None and args.warm_start_episodes > 0:
        raise UserError(f"--init {args.init} starts from that model's weights: drop warm_start_episodes")
    checked_reservations(args.bf_reservations)
    if args.reorder not in REORDERS:
        raise UserError(f"reorder {args.reorder!r}: expected one of {', '.join(REORDERS)}")
    if args.next_in_line < 0:
        raise UserError(f"next_in_line {args.next_in_line}: expected 0 or a positive count")
    if args.starvation_reference not in GUARD_REFERENCES:
        raise UserError(f"starvation_reference {args.starvation_reference!r}: expected one of "
                        f"{', '.join(GUARD_REFERENCES)}")


def base_policy(args: TrainArgs) -> Policy:
    """The base policy of a training: ``multifactor`` with ``slurm_config`` is that cluster's own."""
    site = site_multifactor(args.slurm_config) if args.base == "multifactor" else None
    return site or make_policy(args.base)


def sim_config(args: TrainArgs) -> SimConfig:
    """The simulator every rollout, base run and warm start of a training uses."""
    return SimConfig(bf_reservations=args.bf_reservations)


def rollout_planner(args: TrainArgs) -> PlannerConfig:
    """Rollouts run the policy as the daemon would, with the planner's guard (its reference as given,
    the rest this version's defaults) and reordering (as given) but Slurm's own placement: the actor
    learns an order; the MILP is added at evaluation and in the daemon."""
    return PlannerConfig(placement=False, starvation_reference=guard_reference(args.starvation_reference),
                         reorder=reorder_scope(args.reorder), next_in_line=args.next_in_line)


def rollout_settings(args: TrainArgs) -> dict[str, Any]:
    """What the manifest records of the rollouts' controller (``harness.rollout_controller``): most of
    the guard is this version's default, not an argument, so a later version with another default can
    tell that its re-run differs."""
    return loop_settings(rollout_planner(args), INTERVAL_DEFAULT, args.react)
