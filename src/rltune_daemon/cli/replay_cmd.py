"""``rltune replay``: a trace window on a real Slurm in compressed time, every arm from an empty
cluster, next to the simulator on the same window (fidelity), with results.json/md and plots."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rltune_daemon.cli.common import parse_opts
from rltune_daemon.errors import UserError


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise UserError(f"--seeds {text!r}: expected comma-separated integers (e.g. 0,1,2)") from None
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds {text!r}: expected distinct non-negative integers")
    return seeds


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from rltune_daemon.replay.run import DEFAULT_SPEEDUP
    from rltune_daemon.replay.simulate import PASSES

    p = sub.add_parser("replay",
                       help="run a trace window on a real Slurm in compressed time, vs the simulator")
    p.add_argument("--trace", default="testbed", help="trace name or file (default testbed)")
    p.add_argument("--window-size", type=int, default=256, help="jobs in the window (default 256)")
    p.add_argument("--speedup", type=float, default=DEFAULT_SPEEDUP,
                   help=f"trace seconds per wall second (default {DEFAULT_SPEEDUP:g}: a 256-job testbed "
                        "window, ~19 trace hours, takes ~10 minutes per arm)")
    p.add_argument("--arms", default="multifactor,default",
                   help="comma-separated: multifactor (Slurm alone), default (the daemon with no "
                        "configuration), daemon:<baseline>, rltune:<model dir>; append /nohints to a daemon "
                        "arm for [planner] placement = false, /queue for reorder = \"queue\" (every job "
                        "reordered, not only within size classes)")
    p.add_argument("--seeds", default="0", help="comma-separated; seed s replays evaluate's window of seed s")
    p.add_argument("--out", required=True, help="output directory (results.json, results.md, PNGs)")
    p.add_argument("--cluster", choices=("local", "existing"), default="local",
                   help="local: the project's private 5-node test cluster, started and stopped per arm "
                        "(root); existing: the cluster of SLURM_CONF / --slurm-conf, never reconfigured")
    p.add_argument("--partition", default="", help="with --cluster existing: the partition to submit to")
    p.add_argument("--slurm-conf", default="", help="with --cluster existing: slurm.conf of that cluster")
    p.add_argument("--no-accounting", action="store_true",
                   help="local cluster without slurmdbd (faster start; no sacct for history-reading models, "
                        "and Slurm then ignores the age factor)")
    p.add_argument("--estimates", choices=("oracle", "user", "trace"), default="user")
    p.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="trace option")
    p.add_argument("--parallel", type=int, default=1,
                   help="seeds replayed at once, each on its own private cluster (default 1)")
    p.add_argument("--state-root", default="", metavar="DIR",
                   help="local cluster: where each arm's private cluster keeps its state while it runs "
                        "(default /tmp; deleted after the arm; a short path: munge's socket lives there)")
    p.add_argument("--resimulate", default="", metavar="DIR",
                   help="no Slurm: score the real runs of an earlier replay's DIR/results.json against the "
                        "simulator as it is now; writes --out")
    p.add_argument("--sim-passes", choices=PASSES, default="grid",
                   help="the simulator's scheduling passes: grid (default; full passes every bf_interval x "
                        "speedup, as Slurm's backfill thread), main+grid (also the main scheduler's "
                        "priority-order starts at each event), events (a full pass at every event, as "
                        "rltune evaluate)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from rltune_daemon.evaluate.runner import EVAL_DEFAULT_OPTS
    from rltune_daemon.replay.run import ReplayConfig, resimulate, run_replay

    out = Path(args.out)
    if args.resimulate:
        source = Path(args.resimulate)
        if not (source / "results.json").is_file():
            raise UserError(f"--resimulate {source}: no results.json there")
        resimulate(source, out, passes=args.sim_passes)
        (out / "command.txt").write_text("rltune " + shlex.join(getattr(args, "argv", [])) + "\n")
        print((out / "results.md").read_text())
        return 0

    if args.window_size < 2:
        raise UserError(f"--window-size {args.window_size}: a replay needs at least 2 jobs")
    if args.parallel < 1:
        raise UserError(f"--parallel {args.parallel}: must be at least 1")
    if args.cluster == "local" and (args.partition or args.slurm_conf):
        raise UserError("--partition/--slurm-conf go with --cluster existing")
    opts = {**EVAL_DEFAULT_OPTS.get(args.trace, {}), **parse_opts(args.opt)}
    cfg = ReplayConfig(arms=tuple(a.strip() for a in args.arms.split(",") if a.strip()),
                       seeds=_seeds(args.seeds), trace=args.trace, window_size=args.window_size,
                       speedup=args.speedup, cluster=args.cluster, partition=args.partition,
                       slurm_conf=args.slurm_conf, accounting=not args.no_accounting,
                       estimates=args.estimates, opts=opts, parallel=args.parallel, out=args.out,
                       passes=args.sim_passes, state_root=args.state_root)
    run_replay(cfg)
    (out / "command.txt").write_text("rltune " + shlex.join(getattr(args, "argv", [])) + "\n")
    print((out / "results.md").read_text())
    return 0
