"""``rltune evaluate``: policies on held-out windows of a trace; writes JSON, Markdown and PNG plots."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from rltune_daemon.cli.common import add_bf_reservations, parse_opts
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.engines import parse_engine
from rltune_daemon.evaluate.report import fallback_note, markdown_table, write_results
from rltune_daemon.evaluate.runner import EvalConfig, evaluate
from rltune_daemon.evaluate.verdict import verdict
from rltune_daemon.evaluate.windows import PARTS
from rltune_daemon.planner.config import (
    GUARD_REFERENCES,
    INTERVAL_DEFAULT,
    REACT_DEFAULT,
    STARVATION_CAP_DEFAULT,
    STARVATION_REFERENCE_DEFAULT,
    STARVATION_SECONDS_DEFAULT,
    STARVATION_STRETCH_DEFAULT,
    STARVATION_STRETCH_MAX,
)
from rltune_daemon.policies import BASELINES
from rltune_daemon.sim.config import checked_reservations


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
    p.add_argument("--mode", choices=("daemon", "event"), default="daemon",
                   help="how learned policies run (heuristics always rank at every event)")
    p.add_argument("--cluster", default=None, metavar="PATH", help="cluster file for sacct/CSV traces")
    p.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="trace option")
    p.add_argument("--jobs", type=int, default=0,
                   help="worker processes (default: all cores); with --engine slurm, array tasks (default: "
                        "one per run, at most 32)")
    p.add_argument("--engine", default="local", metavar="local|slurm[:PARTITION]",
                   help="where the runs execute: this machine (default) or a Slurm job array through "
                        "submitit, one CPU per task, same numbers (needs a filesystem every node sees)")
    p.add_argument("--pure", action="store_true", help="switch co-location/cross-node effects off")
    p.add_argument("--interval", type=float, default=INTERVAL_DEFAULT,
                   help="daemon mode: seconds between re-plans, as the daemon's `interval` "
                        f"(default {INTERVAL_DEFAULT:g})")
    p.add_argument("--react", type=float, default=REACT_DEFAULT,
                   help="daemon mode: seconds between queue checks; a changed queue is re-planned at once, "
                        f"as the daemon's `react` (default {REACT_DEFAULT:g}; 0: only every interval)")
    p.add_argument("--placement", choices=("milp", "greedy"), default="milp",
                   help="learned policies: MILP over the top K (default) or Slurm's greedy default")
    guard_hours = f"{STARVATION_SECONDS_DEFAULT / 3600:g}"
    p.add_argument("--starvation-hours", default=guard_hours, metavar="HOURS|off",
                   help="daemon mode: the planner's starvation guard, as the daemon's starvation_seconds "
                        f"(default {guard_hours} h; 'off' disables it, as the paper's event-driven setting "
                        "has none)")
    p.add_argument("--starvation-slots", type=int, default=0, metavar="N",
                   help="daemon mode: kept-back jobs the guard restores at once per tier, longest first, as "
                        "the daemon's starvation_slots (default 0: all)")
    p.add_argument("--starvation-stretch", type=float, default=STARVATION_STRETCH_DEFAULT, metavar="X",
                   help="daemon mode: a long job may stay kept back up to X times its time limit (at most "
                        f"{STARVATION_CAP_DEFAULT / 86400:g} days) before the guard restores it, as the "
                        "daemon's starvation_stretch "
                        f"(default {STARVATION_STRETCH_DEFAULT:g}; 0: the hours above for every job)")
    p.add_argument("--starvation-reference", choices=GUARD_REFERENCES, default=STARVATION_REFERENCE_DEFAULT,
                   help="daemon mode: the position a kept-back job is measured against and restored to, as "
                        "the daemon's starvation_reference: Slurm's own priority order, submit order, or "
                        f"the earlier of both (default {STARVATION_REFERENCE_DEFAULT})")
    p.add_argument("--split", choices=PARTS, default="held-out",
                   help="where the windows come from: the held-out tail (default, for reporting), the "
                        "training part, the training part's own tail (temporal validation), or the training "
                        "part's last windows x window-size jobs as disjoint windows (train-recent): the last "
                        "three choose settings and models without touching the held-out windows")
    add_bf_reservations(p)
    p.add_argument("--out", type=Path, default=None, help="directory for results.json/.md and plots")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Evaluate, print the table (and fallbacks), write ``--out`` with the command line as its record."""
    cfg = eval_config(args)
    engine = parse_engine(args.engine, (args.out or Path.cwd()) / "slurm-jobs")
    results = evaluate(cfg, progress=sys.stderr.isatty(), engine=engine)
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


def eval_config(args: argparse.Namespace) -> EvalConfig:
    """The evaluation the flags ask for, checked: a bad value is a one-line error before any work."""
    if args.trace is None:
        raise UserError("--trace is required")
    policies = tuple(x.strip() for x in args.policies.split(",") if x.strip())
    if not policies:
        raise UserError("--policies is empty")
    if args.windows < 1 or args.window_size < 1:
        raise UserError("--windows and --window-size must be at least 1")
    starvation = _starvation_seconds(args.starvation_hours)
    if not args.interval > 0:
        raise UserError(f"--interval {args.interval:g}: must be a positive number of seconds")
    if args.starvation_slots < 0:
        raise UserError(f"--starvation-slots {args.starvation_slots}: must be 0 (all) or a positive count")
    if not 0 <= args.starvation_stretch <= STARVATION_STRETCH_MAX:
        raise UserError(f"--starvation-stretch {args.starvation_stretch:g}: must be 0 (off) or a positive "
                        f"factor of at most {STARVATION_STRETCH_MAX:g}, as in the daemon's config")
    checked_reservations(args.bf_reservations)
    if not args.react >= 0:
        raise UserError(f"--react {args.react:g}: must be 0 (off) or a positive number of seconds")
    return EvalConfig(trace=args.trace, policies=policies, windows=args.windows, window_size=args.window_size,
                      seed=args.seed, estimates=args.estimates, mode=args.mode, cluster=args.cluster,
                      opts=parse_opts(args.opt), jobs=args.jobs, pure=args.pure,
                      interval=args.interval, react=args.react, starvation_seconds=starvation,
                      starvation_slots=args.starvation_slots, starvation_stretch=args.starvation_stretch,
                      starvation_reference=args.starvation_reference,
                      milp=args.placement == "milp", split=args.split, bf_reservations=args.bf_reservations)


def _starvation_seconds(text: str) -> float:
    if text.strip().lower() == "off":
        return float("inf")
    try:
        hours = float(text)
    except ValueError:
        hours = -1.0
    if not hours > 0 or hours == float("inf"):
        raise UserError(f"--starvation-hours {text!r}: expected a positive number of hours or 'off'")
    return hours * 3600.0
