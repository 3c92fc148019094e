"""``rltune train``: PPO on a trace; writes a TorchScript actor, manifest, curve PNG and CSV."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rltune_daemon.cli.common import add_bf_reservations, parse_opts, print_json, refuse_recipe_settings
from rltune_daemon.errors import UserError
from rltune_daemon.planner.config import GUARD_REFERENCES, STARVATION_REFERENCE_DEFAULT
from rltune_daemon.policies import BASELINES, make_policy
from rltune_daemon.train.episodes import trace_names
from rltune_daemon.train.reward import METRICS_CHOICES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "train", help="train the RLTune actor in the simulator (PPO or cross-entropy search)")
    p.add_argument("--trace", help="trace name (see 'rltune trace list') or file to train on; its last 10 %% "
                        "is held out. Several names (philly,helios,alibaba,testbed): one model for all, "
                        "episodes drawn from each trace equally often")
    p.add_argument("--base", default="sjf",
                   help=f"base policy the reward compares with ({', '.join(BASELINES)})")
    p.add_argument("--minutes", type=float, default=30.0, help="time budget for rollouts and updates")
    p.add_argument("--seed", type=int, default=0,
                   help="seeds the network, the episode windows and the estimate model (the same seed and "
                        "iteration count give the same model: --recipe)")
    p.add_argument("--out", type=Path, required=True, help="model directory, e.g. models/philly-sjf")
    p.add_argument("--mode", choices=("daemon", "event"), default="daemon",
                   help="deployment mode to train in (default daemon: what a real Slurm gets)")
    p.add_argument("--react", type=float, default=0.0, metavar="SECONDS",
                   help="daemon mode: rollouts also re-plan within SECONDS of a queue change, as the "
                        "daemon's react does (default 0: 60-s cycles only, faster rollouts)")
    add_bf_reservations(p)
    p.add_argument("--starvation-reference", choices=GUARD_REFERENCES, default=None,
                   help="daemon mode: the position the rollouts' starvation guard measures a kept-back job "
                        "against, as the daemon's starvation_reference: train under the one you deploy "
                        f"with (default {STARVATION_REFERENCE_DEFAULT}; with --recipe only for a model whose "
                        "manifest predates it)")
    p.add_argument("--features", choices=("sampled", "naive"), default="sampled",
                   help="sampled = paper's engineered+sampled features; naive = raw job features (ablation)")
    p.add_argument("--metric", choices=METRICS_CHOICES, default="bsld+wait",
                   help="what the reward measures: the relative gap to the base policy in mean bounded "
                        "slowdown, mean wait, the mean of both gaps (default), both: the smaller of "
                        "the two gaps, so a window scores as well as its worse metric, or "
                        "bsld+wait+makespan: the mean of three, makespan standing for GPU utilisation")
    p.add_argument("--rivals", default="", metavar="POLICIES",
                   help="other heuristics the reward is measured against too (comma-separated): a window "
                        "scores its smallest reward against the base and each of them; with --metric both, "
                        "lower BSLD and wait than each is the goal, e.g. --base multifactor --rivals fcfs")
    p.add_argument("--estimates", choices=("oracle", "user", "trace"), default="user",
                   help="requested-time model the policies and features see (default: user, as evaluate)")
    p.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="trace option")
    p.add_argument("--cluster", default=None, metavar="PATH",
                   help="cluster file for a sacct/CSV trace (as rltune evaluate's; the manifest records it)")
    p.add_argument("--workers", type=int, default=0, help="rollout processes (default: all cores)")
    p.add_argument("--episodes-per-iter", type=int, default=16, help="ppo: rollouts per update")
    p.add_argument("--episode-jobs", type=int, default=256,
                   help="jobs per training window (the shipped models: 1024, as the held-out windows)")
    p.add_argument("--max-iterations", type=int, default=0, help="stop after N updates (0: use --minutes)")
    p.add_argument("--heldout-windows", type=int, default=None,
                   help="held-out windows evaluated after training and recorded in the manifest (default 10; "
                        "with --recipe the model's own; 0: skip)")
    p.add_argument("--lr", type=float, default=1e-3, help="ppo: Adam learning rate")
    p.add_argument("--warm-start", type=int, default=0, metavar="EPISODES",
                   help="first imitate the base policy's ranking on this many episodes (0: random init)")
    p.add_argument("--init", type=Path, default=None, metavar="MODEL",
                   help="start from this trained model's weights instead of a random or imitated actor: "
                        "fine-tune a shipped model on your trace or backfill (its layers and inputs must "
                        "match this run's; iteration 0 is the model itself)")
    p.add_argument("--episodes", choices=("all", "contended"), default="all",
                   help="episode windows: anywhere in the training split, or only the half of "
                        "--screen-episodes candidates that queue most under the base policy")
    p.add_argument("--screen-episodes", type=int, default=128,
                   help="--episodes contended: candidate windows simulated under the base policy first")
    p.add_argument("--algo", choices=("ppo", "cem"), default="ppo",
                   help="ppo: the paper's trainer; cem: cross-entropy search over a linear scorer's weights, "
                        "each candidate run on the same windows (docs/learning.md)")
    p.add_argument("--hidden", type=int, default=None, metavar="WIDTH",
                   help="actor's first hidden layer (default 64 with ppo; 0 = one linear layer, the only "
                        "choice with cem)")
    p.add_argument("--cem-population", type=int, default=12, help="cem: candidates per generation")
    p.add_argument("--cem-episodes", type=int, default=4,
                   help="cem: windows per generation, the same for every candidate")
    p.add_argument("--cem-elite", type=float, default=0.25,
                   help="cem: share of candidates the next generation is fitted to")
    p.add_argument("--cem-sigma", type=float, default=0.5,
                   help="cem: first spread of the weights, relative to the starting weights' size "
                        "(absolute when they are zero)")
    p.add_argument("--recipe", type=Path, default=None, metavar="MODEL",
                   help="repeat MODEL's run: every setting, the seed and the iteration count its manifest "
                        "records (only --out, --workers, --init, --max-iterations, --heldout-windows and "
                        "--starvation-reference may be given), then say whether the new actor has the same "
                        "weights")
    p.set_defaults(func=run)
    p.set_defaults(parser_defaults=vars(p.parse_args(["--out", "_"])))  # --recipe: what was not given


def run(args: argparse.Namespace) -> int:
    from rltune_daemon.evaluate.runner import EVAL_DEFAULT_OPTS
    from rltune_daemon.train.ppo import TrainArgs, train

    if args.recipe is not None:
        return _recipe(args)
    if args.trace is None:
        raise UserError("--trace is required (or --recipe MODEL to repeat a model's run)")
    make_policy(args.base)  # validate before any work
    if len(trace_names(args.trace)) > 1 and (args.opt or args.cluster):
        raise UserError(f"--trace {args.trace}: --opt and --cluster go with one trace; several bundled "
                        "traces each train on their own defaults")
    # train on the same workload the evaluation splits (e.g. testbed with jobs=20480)
    opts = {**EVAL_DEFAULT_OPTS.get(args.trace, {}), **parse_opts(args.opt)}
    if not args.react >= 0:
        raise UserError(f"--react {args.react:g}: must be 0 (off) or a positive number of seconds")
    ppo_only = [f"--{name.replace('_', '-')}" for name in ("lr", "episodes_per_iter")
                if getattr(args, name) != getattr(TrainArgs, name)]  # set away from the default
    if args.algo == "cem" and ppo_only:
        raise UserError(f"{', '.join(ppo_only)}: PPO's settings, unused by --algo cem; drop them (cem's own "
                        "are --cem-population, --cem-episodes, --cem-elite, --cem-sigma)")
    if args.minutes <= 0 and args.max_iterations <= 0:
        raise UserError("--minutes must be positive (or give --max-iterations)")
    targs = TrainArgs(
        trace=args.trace, out=args.out, base=args.base, minutes=args.minutes, seed=args.seed, mode=args.mode,
        react=args.react, bf_reservations=args.bf_reservations,
        starvation_reference=args.starvation_reference or STARVATION_REFERENCE_DEFAULT,
        features=args.features, metric=args.metric, rivals=args.rivals, estimates=args.estimates, opts=opts,
        cluster=args.cluster,
        workers=args.workers, episodes_per_iter=args.episodes_per_iter, episode_jobs=args.episode_jobs,
        max_iterations=args.max_iterations, heldout_windows=10 if args.heldout_windows is None else
        args.heldout_windows, lr=args.lr,
        warm_start_episodes=args.warm_start, init=args.init,
        episodes=args.episodes, screen_episodes=args.screen_episodes,
        algo=args.algo, hidden=(0 if args.algo == "cem" else 64) if args.hidden is None else args.hidden,
        cem_population=args.cem_population, cem_episodes=args.cem_episodes, cem_elite=args.cem_elite,
        cem_sigma=args.cem_sigma, progress=sys.stderr.isatty(),
    )
    _report(train(targs), args.out)
    return 0


SUMMARY = ("trace", "base_policy", "mode", "features", "training_minutes", "iterations", "best_iteration",
           "validation_reward", "heldout")
RECIPE_FREE = {"recipe", "out", "workers", "init", "max_iterations", "heldout_windows",
               "starvation_reference", "func", "parser_defaults", "argv"}


def _report(manifest: dict[str, object], out: Path) -> None:
    print_json({k: manifest.get(k) for k in SUMMARY})
    print(f"wrote {out}/actor.pt, manifest.json, training.csv, training_curve.png")


def _recipe(args: argparse.Namespace) -> int:
    """``--recipe MODEL``: train with the model's recorded settings, then compare the actors."""
    from rltune_daemon.train.ppo import train
    from rltune_daemon.train.recipe import actor_difference, recipe_args

    refuse_recipe_settings(args, RECIPE_FREE, "the model's manifest")
    if args.recipe.resolve() == args.out.resolve():
        raise UserError(f"--out {args.out}: that is the model being repeated; give a new directory")
    targs, notes = recipe_args(args.recipe, args.out, init=args.init, workers=args.workers,
                               max_iterations=args.max_iterations, heldout_windows=args.heldout_windows,
                               starvation_reference=args.starvation_reference,
                               progress=sys.stderr.isatty())
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    manifest = train(targs)
    _report(manifest, args.out)
    diff = actor_difference(args.recipe, args.out)
    if diff == 0.0:
        print(f"same actor weights as {args.recipe}")
    elif diff is None:
        print(f"differs from {args.recipe}: other layers")
    else:
        print(f"differs from {args.recipe}: largest weight difference {diff:.3g}")
    return 0
