"""``rltune bench``: timings as benchmarks (never as test assertions). ``sim`` times one whole-trace
simulation; ``decide`` times one daemon decision (``bench.decide``); ``soak`` runs the daemon long and
watches it from outside (``bench.soak``); ``cycle`` times the daemon's cycle stage by stage on the
local Slurm (``bench.cycle``); ``read`` times the read's parsing and the decision on a generated queue
(``bench.decide_read``); ``state`` times a save of the undo record (``bench.state``); ``site`` times
``rltune site`` on a generated history (``bench.site``)."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from rltune_daemon.bench import cycle, decide, decide_read, site, soak, state
from rltune_daemon.cli.common import add_bf_reservations, add_load_args, load_from_args, machine, print_json
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.runner import EvalConfig, make_controller
from rltune_daemon.sim import Simulator
from rltune_daemon.sim.config import checked_reservations


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="benchmarks (JSON output)")
    bsub = p.add_subparsers(dest="bench", required=True)
    s = bsub.add_parser("sim", help="simulate a whole trace under one policy and time it")
    add_load_args(s, positional=False)
    s.add_argument("--policy", default="fcfs", help="a policy as rltune evaluate names it: a heuristic "
                   "(ranked at every pass), daemon:<heuristic> or rltune:<model dir> (the daemon's cycles)")
    s.add_argument("--repeat", type=int, default=1, help="runs; the JSON reports each and the best")
    add_bf_reservations(s)
    s.set_defaults(func=bench_sim)

    st = bsub.add_parser("state", help="time a save of the daemon's undo record (the state journal)")
    st.add_argument("--jobs", type=int, default=10_000, help="recorded jobs (default 10000)")
    st.add_argument("--changed", type=int, default=200, help="jobs a cycle changes (default 200)")
    st.add_argument("--repeats", type=int, default=20, help="timed saves (default 20); the median "
                    "is reported")
    st.add_argument("--dir", type=Path, default=None, help="where the journal is written (default: a "
                    "temporary directory; the disk under the daemon's StateDirectory is what counts)")
    st.set_defaults(func=bench_state)

    rd = bsub.add_parser("read", help="time the Python side of a cycle (the read's parsing and checks, the "
                         "decision) on a generated queue, no Slurm needed")
    rd.add_argument("--pending", type=int, default=10_000, help="pending jobs (default 10000)")
    rd.add_argument("--policies", default="sjf,models/testbed-multifactor",
                    help="policies or model directories, comma-separated")
    rd.add_argument("--nodes", type=int, default=0, help="generated nodes (default: the 5-node testbed)")
    rd.add_argument("--seed", type=int, default=0)
    rd.add_argument("--repeat", type=int, default=3, help="runs; the best is reported")
    rd.add_argument("--warm-cycles", type=int, default=4, help="cycles before the timing (steady state)")
    rd.set_defaults(func=bench_read)

    decide.register(bsub)
    soak.register(bsub)
    cycle.register(bsub)
    site.register(bsub)


def bench_read(args: argparse.Namespace) -> int:
    if args.pending < 1 or args.repeat < 1:
        raise UserError("--pending and --repeat must be positive")
    res = decide_read.bench_decide_read(args.pending, [p for p in args.policies.split(",") if p],
                                        nodes=args.nodes, seed=args.seed, repeat=args.repeat,
                                        warm_cycles=args.warm_cycles)
    print_json({"bench": "read", **res, **machine()})
    return 0


def bench_state(args: argparse.Namespace) -> int:
    if min(args.jobs, args.changed, args.repeats) < 1 or args.changed > args.jobs:
        raise UserError("--jobs, --changed and --repeats must be positive, and --changed at most --jobs")
    with tempfile.TemporaryDirectory(prefix="rltune-bench-state-", dir=args.dir) as tmp:
        result = state.time_saves(Path(tmp) / "state.db", args.jobs, args.changed, args.repeats)
    print_json({"bench": "state", **result, **machine()})
    return 0


def bench_sim(args: argparse.Namespace) -> int:
    cfg = EvalConfig(trace=args.trace, policies=(args.policy,), estimates=args.estimates,
                     bf_reservations=checked_reservations(args.bf_reservations))
    t0 = time.perf_counter()
    workload = load_from_args(args)
    load_s = time.perf_counter() - t0
    no_past = workload.with_jobs(())  # a policy that learns from past runs starts with none: all is timed
    runs: list[float] = []
    stats: dict[str, Any] = {}
    metrics: dict[str, Any] = {}
    for _ in range(max(args.repeat, 1)):
        sim = Simulator(workload, make_controller(args.policy, no_past, cfg), cfg.sim_config())
        t1 = time.perf_counter()
        res = sim.run()
        runs.append(time.perf_counter() - t1)
        stats, metrics = res.stats, res.metrics
    best = min(runs)
    print_json({
        "bench": "sim", "trace": args.trace, "policy": args.policy, "jobs": len(workload.jobs),
        "bf_reservations": args.bf_reservations,
        "cluster_gpus": workload.cluster.total_gpus, "load_seconds": round(load_s, 3),
        "seconds": [round(r, 3) for r in runs], "best_seconds": round(best, 3),
        "jobs_per_second": round(len(workload.jobs) / best, 1), "stats": stats,
        "wait_mean": metrics.get("wait_mean"), "utilization": metrics.get("utilization"), **machine(),
    })
    return 0
