"""``rltune train``: PPO on a trace; writes a TorchScript actor, manifest, curve PNG and CSV.

The command line says what to train (trace, base policy, budget, seed, trainer, where to write); the
trainer's knobs are ``--config`` keys under the names the manifest records them by (``hyperparameters``),
and ``--config MODEL`` repeats a model's recorded run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rltune_daemon.cli.common import add_bf_reservations, parse_opts, print_json
from rltune_daemon.cli.settings import field_hints, read_settings
from rltune_daemon.errors import UserError
from rltune_daemon.policies import BASELINES, make_policy
from rltune_daemon.policies.learned import MANIFEST_FILE

# TrainArgs fields the command line sets, and their flags; ``--config`` holds every other one but these.
FLAGS = {"trace": "--trace", "base": "--base", "minutes": "--minutes", "seed": "--seed", "out": "--out",
         "bf_reservations": "--bf-reservations", "estimates": "--estimates", "opts": "--opt",
         "cluster": "--cluster", "workers": "--workers", "episode_jobs": "--episode-jobs",
         "heldout_windows": "--heldout-windows", "init": "--init", "algo": "--algo"}
NOT_SETTINGS = frozenset({"progress"})  # how the run is shown, not how it trains
# PPO's own settings, unused by the cross-entropy search
PPO_ONLY = ("lr", "episodes_per_iter")
CEM_OWN = "cem_population, cem_episodes, cem_elite, cem_sigma"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "train", help="train the RLTune actor in the simulator (PPO or cross-entropy search)")
    p.add_argument("--trace", help="trace name (see 'rltune trace list') or file to train on; its last 10 %% "
                        "is held out")
    p.add_argument("--base", default=None,
                   help=f"base policy the reward compares with ({', '.join(BASELINES)}; default sjf)")
    p.add_argument("--minutes", type=float, default=None,
                   help="time budget for rollouts and updates (default 30)")
    p.add_argument("--seed", type=int, default=None,
                   help="seeds the network, the episode windows and the estimate model (default 0; the same "
                        "seed and iteration count give the same model)")
    p.add_argument("--out", type=Path, required=True, help="model directory, e.g. models/philly-sjf")
    add_bf_reservations(p)
    p.set_defaults(bf_reservations=None)  # the default is TrainArgs'; None: not given (--config MODEL)
    p.add_argument("--estimates", choices=("oracle", "user", "trace"), default=None,
                   help="requested-time model the policies and features see (default: user, as evaluate)")
    p.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="trace option")
    p.add_argument("--cluster", default=None, metavar="PATH|NAME",
                   help="cluster file for a sacct/CSV trace, or a bundled trace's name for its cluster (as "
                        "rltune evaluate's; the manifest records it)")
    p.add_argument("--workers", type=int, default=0, help="rollout processes (default: all cores)")
    p.add_argument("--episode-jobs", type=int, default=None,
                   help="jobs per training window (default 256; the shipped models: 1024, as the held-out "
                        "windows)")
    p.add_argument("--heldout-windows", type=int, default=None,
                   help="held-out windows evaluated after training and recorded in the manifest (default 10; "
                        "with --config MODEL the model's own; 0: skip)")
    p.add_argument("--init", type=Path, default=None, metavar="MODEL",
                   help="start from this trained model's weights instead of a random or imitated actor: "
                        "fine-tune a shipped model on your trace or backfill (its layers and inputs must "
                        "match this run's; iteration 0 is the model itself)")
    p.add_argument("--algo", choices=("ppo", "cem"), default=None,
                   help="ppo (default): the paper's trainer; cem: cross-entropy search over a linear "
                        "scorer's weights, each candidate run on the same windows (docs/learning.md)")
    p.add_argument("--config", type=Path, default=None, metavar="FILE|MODEL",
                   help="a TOML file of the trainer's other settings, by the names a manifest records under "
                        "hyperparameters (e.g. warm_start_episodes = 16, episodes = \"contended\", mode, "
                        "react, starvation_reference, features, metric, lr, episodes_per_iter, "
                        "hidden, cem_sigma, max_iterations; docs/learning.md); or a model directory (or its "
                        f"{MANIFEST_FILE}): repeat its run with every setting, the seed and the iteration "
                        "count it records (only --out, --workers, --init and --heldout-windows may be "
                        "given), then say whether the new actor has the same weights")
    p.set_defaults(func=run)
    p.set_defaults(parser_defaults=vars(p.parse_args(["--out", "_"])))  # --config MODEL: what was not given


def config_hints() -> dict[str, Any]:
    """The ``--config`` keys and their types: TrainArgs' fields but the command line's."""
    from rltune_daemon.train.args import TrainArgs

    return field_hints(TrainArgs, FLAGS.keys() | NOT_SETTINGS)


def run(args: argparse.Namespace) -> int:
    from rltune_daemon.evaluate.runner import EVAL_DEFAULT_OPTS
    from rltune_daemon.train.args import TrainArgs
    from rltune_daemon.train.run import train

    model = _model_dir(args.config)
    if model is not None:
        return _repeat(args, model)
    settings = read_settings(args.config, config_hints(), FLAGS) if args.config is not None else {}
    if args.trace is None:
        raise UserError("--trace is required (or --config MODEL to repeat a model's run)")
    given = {k: v for k, v in vars(args).items() if k in FLAGS and k != "out" and v is not None}
    make_policy(given.get("base", TrainArgs.base))  # validate before any work
    # train on the same workload the evaluation splits (e.g. testbed with jobs=20480)
    opts = {**EVAL_DEFAULT_OPTS.get(args.trace, {}), **parse_opts(args.opt)}
    algo = given.get("algo", TrainArgs.algo)
    ppo_only = [k for k in PPO_ONLY if settings.get(k, getattr(TrainArgs, k)) != getattr(TrainArgs, k)]
    if algo == "cem" and ppo_only:
        raise UserError(f"{', '.join(ppo_only)}: PPO's settings, unused by --algo cem; drop "
                        f"{'it' if len(ppo_only) == 1 else 'them'} (cem's own are {CEM_OWN})")
    settings.setdefault("hidden", 0 if algo == "cem" else TrainArgs.hidden)  # cem searches linear scorers
    minutes = given.get("minutes", TrainArgs.minutes)
    if minutes <= 0 and settings.get("max_iterations", 0) <= 0:
        raise UserError("--minutes must be positive (or set max_iterations in --config)")
    targs = TrainArgs(**{**settings, **given, "opts": opts, "out": args.out, "progress": sys.stderr.isatty()})
    _report(train(targs), args.out)
    return 0


SUMMARY = ("trace", "base_policy", "mode", "features", "training_minutes", "iterations", "best_iteration",
           "validation_reward", "heldout")
# what a repeat may be given: where it writes, how many processes, where the starting model is now and
# whether to measure the held-out windows again
REPEAT_FREE = {"config", "out", "workers", "init", "heldout_windows", "func", "parser_defaults", "argv"}


def _report(manifest: dict[str, object], out: Path) -> None:
    print_json({k: manifest.get(k) for k in SUMMARY})
    print(f"wrote {out}/actor.pt, manifest.json, training.csv, training_curve.png")


def _model_dir(config: Path | None) -> Path | None:
    """The model ``--config`` names (its directory or manifest), or None for a TOML settings file."""
    if config is None:
        return None
    if config.is_dir():
        return config
    if config.name == MANIFEST_FILE:
        return config.parent
    return None


def _repeat(args: argparse.Namespace, model: Path) -> int:
    """``--config MODEL``: train with the model's recorded settings, then compare the actors."""
    from rltune_daemon.train.recipe import actor_difference, recipe_args
    from rltune_daemon.train.run import train

    given = sorted(k for k, v in vars(args).items()
                   if k not in REPEAT_FREE and v != args.parser_defaults.get(k, v))
    if given:
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in given)
        raise UserError(f"{flags}: --config {args.config} takes every setting from the model's manifest; "
                        f"drop {'them' if len(given) > 1 else 'it'}")
    if model.resolve() == args.out.resolve():
        raise UserError(f"--out {args.out}: that is the model being repeated; give a new directory")
    targs, notes = recipe_args(model, args.out, init=args.init, workers=args.workers,
                               heldout_windows=args.heldout_windows, progress=sys.stderr.isatty())
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    manifest = train(targs)
    _report(manifest, args.out)
    diff = actor_difference(model, args.out)
    if diff == 0.0:
        print(f"same actor weights as {model}")
    elif diff is None:
        print(f"differs from {model}: other layers")
    else:
        print(f"differs from {model}: largest weight difference {diff:.3g}")
    return 0
