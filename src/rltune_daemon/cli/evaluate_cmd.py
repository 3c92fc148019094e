"""``rltune evaluate``: policies on held-out windows of a trace; writes JSON, Markdown and PNG plots.

The command line says what to evaluate and where (trace, policies, windows, split, backfill, engine);
how learned policies run (mode, the daemon's cycle and starvation guard, placement) and the worker
count are ``--config`` keys, under the names results.json records them by in its ``config``.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path
from typing import Any

from rltune_daemon.cli.common import add_bf_reservations
from rltune_daemon.cli.settings import field_hints, read_settings
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.engines import parse_engine
from rltune_daemon.evaluate.report import fallback_note, load_line, markdown_table, write_results
from rltune_daemon.evaluate.runner import EvalConfig, evaluate
from rltune_daemon.evaluate.verdict import verdict
from rltune_daemon.evaluate.windows import PARTS
from rltune_daemon.planner.config import GUARD_REFERENCES, STARVATION_STRETCH_MAX
from rltune_daemon.policies import BASELINES
from rltune_daemon.policies.slurm_priority import site_multifactor
from rltune_daemon.sim.config import checked_reservations

# EvalConfig fields the command line sets, and their flags; ``--config`` holds the others.
FLAGS = {"trace": "--trace", "policies": "--policies", "windows": "--windows", "window_size": "--window-size",
         "seed": "--seed", "estimates": "--estimates", "cluster": "--cluster", "split": "--split",
         "bf_reservations": "--bf-reservations", "slurm_config": "--slurm-config"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("evaluate", help="compare policies on held-out trace windows")
    p.add_argument("--trace", default=None, help="trace name or file (see 'rltune trace list')")
    p.add_argument("--policies", default=",".join(BASELINES),
                   help="comma-separated: fcfs,sjf,wfp3,unicep,f1,multifactor,qssf, rltune:<model dir> "
                        "(learned) and daemon:<baseline> (a baseline as the daemon applies it, no model)")
    p.add_argument("--windows", type=int, default=10, help="windows to simulate (default 10)")
    p.add_argument("--window-size", type=int, default=1024, help="jobs per window (default 1024)")
    p.add_argument("--seed", type=int, default=0,
                   help="which windows are drawn, and the estimate model's seed: same seed, same numbers")
    p.add_argument("--estimates", choices=("oracle", "user", "trace"), default="user",
                   help="requested-time model every policy sees (default: user)")
    p.add_argument("--cluster", default=None, metavar="PATH|NAME",
                   help="cluster file for sacct/CSV traces, or a bundled trace's name for its cluster")
    p.add_argument("--engine", default="local", metavar="local|slurm[:PARTITION]",
                   help="where the runs execute: this machine (default) or a Slurm job array through "
                        "submitit, one CPU per task, same numbers (needs a filesystem every node sees); "
                        "array tasks: the config's jobs (default: one per run, at most 32)")
    p.add_argument("--split", choices=PARTS, default="held-out",
                   help="where the windows come from: the held-out tail (default, for reporting), the "
                        "training part, the training part's own tail (temporal validation), the training "
                        "part's last windows x window-size jobs as disjoint windows (train-recent): those "
                        "three choose settings and models without touching the held-out windows; all: the "
                        "whole trace, for one too short to hold a tail out (nothing is held out); recent: "
                        "the trace's last windows x window-size jobs end to end, the rest as history")
    add_bf_reservations(p)
    p.add_argument("--slurm-config", default="", metavar="FILE",
                   help="a saved `scontrol show config` of the cluster: multifactor, and the simulated Slurm "
                        "under every daemon: policy, rank jobs by its own weights, PriorityMaxAge and "
                        "PriorityFavorSmall instead of the default formula (rltune site does this for you)")
    p.add_argument("--out", type=Path, default=None, help="directory for results.json/.md and plots")
    p.add_argument("--config", type=Path, default=None, metavar="FILE",
                   help="a TOML file of how the run goes, by the names results.json records under config: "
                        "mode (daemon, the default, or event: how learned policies run), the daemon's "
                        "interval, react, starvation_seconds (or \"off\"), starvation_slots, "
                        "starvation_stretch and starvation_reference, milp (false: Slurm's greedy "
                        "placement), pure (true: no co-location/cross-node effects), jobs (worker "
                        "processes; default: all cores) and [opts] (trace options) (docs/learning.md)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Evaluate, print the table (and fallbacks), write ``--out`` with the command line as its record."""
    cfg = eval_config(args)
    engine = parse_engine(args.engine, (args.out or Path.cwd()) / "slurm-jobs")
    results = evaluate(cfg, progress=sys.stderr.isatty(), engine=engine)
    print(f"{cfg.trace}: {load_line(results['config'])}")
    print(markdown_table(results, baseline="fcfs" if "fcfs" in cfg.policies else cfg.policies[0]))
    note = fallback_note(results)
    if note:
        print(note)
    if line := verdict(results):
        print(line)
    if args.out is not None:
        command = "rltune " + " ".join(shlex.quote(a) for a in args.argv)
        for path in write_results(results, args.out, command):
            print(f"wrote {path}")
    return 0


def config_hints() -> dict[str, Any]:
    """The ``--config`` keys and their types: EvalConfig's fields but the command line's; the guard's
    ``starvation_seconds`` may also be "off", as results.json records a guard switched off."""
    return field_hints(EvalConfig, FLAGS.keys(), starvation_seconds=float | str)


def eval_config(args: argparse.Namespace) -> EvalConfig:
    """The evaluation the flags and ``--config`` ask for, checked: a bad value is a one-line error before
    any work."""
    if args.trace is None:
        raise UserError("--trace is required")
    policies = tuple(x.strip() for x in args.policies.split(",") if x.strip())
    if not policies:
        raise UserError("--policies is empty")
    if args.windows < 1 or args.window_size < 1:
        raise UserError("--windows and --window-size must be at least 1")
    checked_reservations(args.bf_reservations)
    if args.slurm_config:
        site_multifactor(args.slurm_config)  # a bad file is one line here, not a failure in a worker
    settings = read_settings(args.config, config_hints(), FLAGS) if args.config is not None else {}
    cfg = EvalConfig(trace=args.trace, policies=policies, windows=args.windows, window_size=args.window_size,
                     seed=args.seed, estimates=args.estimates, cluster=args.cluster, split=args.split,
                     bf_reservations=args.bf_reservations, slurm_config=args.slurm_config,
                     **{**settings, "starvation_seconds": _starvation_seconds(settings)})
    if cfg.mode not in ("daemon", "event"):
        raise UserError(f"mode {cfg.mode!r}: expected 'daemon' or 'event'")
    if not cfg.interval > 0:
        raise UserError(f"interval {cfg.interval:g}: must be a positive number of seconds")
    if not cfg.react >= 0:
        raise UserError(f"react {cfg.react:g}: must be 0 (off) or a positive number of seconds")
    if cfg.starvation_slots < 0:
        raise UserError(f"starvation_slots {cfg.starvation_slots}: must be 0 (all) or a positive count")
    if not 0 <= cfg.starvation_stretch <= STARVATION_STRETCH_MAX:
        raise UserError(f"starvation_stretch {cfg.starvation_stretch:g}: must be 0 (off) or a positive "
                        f"factor of at most {STARVATION_STRETCH_MAX:g}, as in the daemon's config")
    if cfg.starvation_reference not in GUARD_REFERENCES:
        raise UserError(f"starvation_reference {cfg.starvation_reference!r}: expected one of "
                        f"{', '.join(GUARD_REFERENCES)}")
    if cfg.passes not in ("events", "slurm") or (cfg.passes == "slurm" and not cfg.slurm_config):
        raise UserError(f"passes {cfg.passes!r}: expected 'events' or 'slurm' (which needs --slurm-config)")
    if cfg.jobs < 0:
        raise UserError(f"jobs {cfg.jobs}: must be 0 (all cores) or a positive count")
    return cfg


def _starvation_seconds(settings: dict[str, Any]) -> float:
    """The guard's ``starvation_seconds`` (infinite for "off", as results.json records a guard off)."""
    value = settings.get("starvation_seconds", EvalConfig.starvation_seconds)
    if isinstance(value, str):
        if value.strip().lower() != "off":
            raise UserError(f"starvation_seconds {value!r}: expected a positive number of seconds or \"off\"")
        return math.inf
    if not value > 0:
        raise UserError(f"starvation_seconds {value:g}: expected a positive number of seconds or \"off\"")
    return float(value)
