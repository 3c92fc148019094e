"""``rltune train``: PPO on a trace; writes a TorchScript actor, manifest, curve PNG and CSV."""

from __future__ import annotations

import argparse
from pathlib import Path

from rltune_daemon.cli.common import add_bf_reservations, parse_opts, print_json
from rltune_daemon.errors import UserError
from rltune_daemon.policies import BASELINES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "train", help="train the RLTune actor in the simulator (PPO or cross-entropy search)")
    p.add_argument("--trace", required=True)
    p.add_argument("--base", default="sjf",
                   help=f"base policy the reward compares with ({', '.join(BASELINES)})")
    p.add_argument("--minutes", type=float, default=30.0, help="time budget for rollouts and updates")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="model directory, e.g. models/philly-sjf")
    p.add_argument("--mode", choices=("daemon", "event"), default="daemon",
                   help="deployment mode to train in (default daemon: what a real Slurm gets)")
    p.add_argument("--react", type=float, default=0.0, metavar="SECONDS",
                   help="daemon mode: rollouts also re-plan within SECONDS of a queue change, as the "
                        "daemon's react does (default 0: 60-s cycles only, faster rollouts)")
    add_bf_reservations(p)
    p.add_argument("--features", choices=("sampled", "naive"), default="sampled",
                   help="sampled = paper's engineered+sampled features; naive = raw job features (ablation)")
    p.add_argument("--metric", choices=("bsld", "wait", "bsld+wait"), default="bsld+wait")
    p.add_argument("--estimates", choices=("oracle", "user", "trace"), default="user")
    p.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="trace option")
    p.add_argument("--workers", type=int, default=0, help="rollout processes (default: all cores)")
    p.add_argument("--episodes-per-iter", type=int, default=16)
    p.add_argument("--episode-jobs", type=int, default=256)
    p.add_argument("--max-iterations", type=int, default=0, help="stop after N updates (0: use --minutes)")
    p.add_argument("--heldout-windows", type=int, default=10,
                   help="held-out windows evaluated after training and recorded in the manifest (0: skip)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warm-start", type=int, default=0, metavar="EPISODES",
                   help="first imitate the base policy's ranking on this many episodes (0: random init)")
    p.add_argument("--init", type=Path, default=None, metavar="MODEL",
                   help="start from this trained model's weights instead of a random or imitated actor: "
                        "fine-tune a shipped model on your trace or backfill (its layers and inputs must "
                        "match this run's; iteration 0 is the model itself)")
    p.add_argument("--reach", type=float, default=0.0, metavar="R",
                   help="residual model: the actor only corrects the base policy's order, each job by fewer "
                        "than R places; it starts as the base policy exactly (0: the actor ranks on its own)")
    p.add_argument("--reach-beta", type=float, default=2.0,
                   help="--reach: sampling temperature in training (logits = beta x key; higher: closer to "
                        "the base order)")
    p.add_argument("--episodes", choices=("all", "contended"), default="all",
                   help="episode windows: anywhere in the training split, or only the half of "
                        "--screen-episodes candidates that queue most under the base policy")
    p.add_argument("--screen-episodes", type=int, default=128,
                   help="--episodes contended: candidate windows simulated under the base policy first")
    p.add_argument("--validation", choices=("anywhere", "tail"), default="anywhere",
                   help="where the validation episodes that pick the exported iteration come from: anywhere "
                        "in the training split, or its last 10 %% with training episodes only before it "
                        "(temporal validation; the split that predicted held-out results better, "
                        "docs/results.md)")
    p.add_argument("--credit", choices=("episode", "step"), default="episode",
                   help="episode: every decision shares the episode's reward (paper); step: each decision is "
                        "charged the slowdown and wait accrued until the next one, advantages by GAE")
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
                        "(absolute when they are zero: --reach)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from rltune_daemon.evaluate.runner import EVAL_DEFAULT_OPTS
    from rltune_daemon.policies import make_policy
    from rltune_daemon.train.ppo import TrainArgs, train

    make_policy(args.base)  # validate before any work
    # train on the same workload the evaluation splits (e.g. testbed with jobs=20480)
    opts = {**EVAL_DEFAULT_OPTS.get(args.trace, {}), **parse_opts(args.opt)}
    if not args.react >= 0:
        raise UserError(f"--react {args.react:g}: must be 0 (off) or a positive number of seconds")
    ppo_only = [f"--{name.replace('_', '-')}" for name in ("lr", "credit", "episodes_per_iter")
                if getattr(args, name) != getattr(TrainArgs, name)]  # set away from the default
    if args.algo == "cem" and ppo_only:
        raise UserError(f"{', '.join(ppo_only)}: PPO's settings, unused by --algo cem; drop them (cem's own "
                        "are --cem-population, --cem-episodes, --cem-elite, --cem-sigma)")
    if args.minutes <= 0 and args.max_iterations <= 0:
        raise UserError("--minutes must be positive (or give --max-iterations)")
    targs = TrainArgs(
        trace=args.trace, out=args.out, base=args.base, minutes=args.minutes, seed=args.seed, mode=args.mode,
        react=args.react, bf_reservations=args.bf_reservations,
        features=args.features, metric=args.metric, estimates=args.estimates, opts=opts,
        workers=args.workers, episodes_per_iter=args.episodes_per_iter, episode_jobs=args.episode_jobs,
        max_iterations=args.max_iterations, heldout_windows=args.heldout_windows, lr=args.lr,
        warm_start_episodes=args.warm_start, init=args.init, credit=args.credit, reach=args.reach,
        reach_beta=args.reach_beta,
        episodes=args.episodes, screen_episodes=args.screen_episodes, validation=args.validation,
        algo=args.algo, hidden=(0 if args.algo == "cem" else 64) if args.hidden is None else args.hidden,
        cem_population=args.cem_population, cem_episodes=args.cem_episodes, cem_elite=args.cem_elite,
        cem_sigma=args.cem_sigma, progress=sys.stderr.isatty(),
    )
    manifest = train(targs)
    print_json({k: manifest.get(k) for k in ("trace", "base_policy", "mode", "features", "training_minutes",
                                             "iterations", "best_iteration", "validation_reward", "heldout")})
    print(f"wrote {args.out}/actor.pt, manifest.json, training.csv, training_curve.png")
    return 0
