"""``rltune bench decide``: one daemon decision (features + actor + MILP placement + plan) timed at
several queue lengths on a realistic, seeded cluster state.

The state is built from a trace: its cluster, every node partly or fully busy with running jobs whose
estimated ends lie in the next hours (so Future Availability and fragmentation have work to do), and
``N`` pending jobs taken in submit order from the trace (recycled with fresh ids past its end) with
submit times spread over the last six hours, and the trace's runs as history (``hist_time``, QSSF).
Timings are benchmarks; compare them within one run.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

import numpy as np

from rltune_daemon import features
from rltune_daemon.cli.common import add_load_args, load_from_args, machine, print_json
from rltune_daemon.domain import Job, Snapshot, Workload
from rltune_daemon.domain.arrays import JobTable
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.domain.snapshot import NodeAlloc, NodeState, PendingState, RunningJob
from rltune_daemon.errors import UserError
from rltune_daemon.features.schema import new_history
from rltune_daemon.placement.context import PlacementContext, PlacementResult, Placer
from rltune_daemon.planner import PlannerConfig, PlannerMemory, plan
from rltune_daemon.planner.plan import inputs_from
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.learned import LearnedPolicy, load_learned
from rltune_daemon.service.config import PlannerSection
from rltune_daemon.service.policy import CountingPlacer

DEFAULT_SIZES = "128,256,512,1024,10000"
CLOCK = 1.0e6  # any positive clock: features only use differences


def decision_snapshot(workload: Workload, n_pending: int, seed: int, busy: float = 0.85) -> Snapshot:
    """A seeded cluster state: about ``busy`` of the GPUs held by running jobs, ``n_pending`` waiting."""
    rng = np.random.default_rng(seed)
    jobs = workload.jobs
    nodes: list[NodeState] = []
    running: list[RunningJob] = []
    for k, spec in enumerate(workload.cluster.nodes):
        used = int(rng.binomial(spec.gpus, busy)) if spec.gpus else 0
        cpus = spec.cpus * used // spec.gpus if spec.gpus else int(spec.cpus * busy)
        mem = spec.mem_mb * used // spec.gpus if spec.gpus else int(spec.mem_mb * busy)
        nodes.append(NodeState(name=spec.name, gpu_type=spec.gpu_type, gpus=spec.gpus, gpus_alloc=used,
                               cpus=spec.cpus, cpus_alloc=cpus, mem_mb=spec.mem_mb, mem_alloc_mb=mem,
                               partitions=spec.partitions, state="mixed" if used or cpus else "idle",
                               usable=True))
        if used or cpus:
            limit = float(rng.choice([3600.0, 4 * 3600.0, 12 * 3600.0, 24 * 3600.0]))
            start = CLOCK - float(rng.uniform(0, limit))
            job = Job(f"run{k}", start - 60.0, used, limit, cpus=cpus, mem_mb=mem,
                      partition=spec.partitions[0] if spec.partitions else "")
            running.append(RunningJob(job, start, start + limit, (NodeAlloc(spec.name, used, cpus, mem),)))
    first = int(rng.integers(0, max(1, len(jobs) - n_pending))) if len(jobs) > n_pending else 0
    ages = np.sort(rng.uniform(0, 6 * 3600.0, n_pending))[::-1]
    pending = []
    for i in range(n_pending):
        src = jobs[(first + i) % len(jobs)]
        pending.append(replace(src, id=f"p{i}", submit=CLOCK - float(ages[i]), runtime=None))
    states = tuple(PendingState(priority=int(1000 + ages[i] / 60.0), reason="Resources" if i == 0 else
                                "Priority") for i in range(n_pending))
    return Snapshot(CLOCK, tuple(pending), states, tuple(running), tuple(nodes),
                    workload.cluster.partitions, "bench")


def _policy(model: str | None, dim_hidden: int, seed: int) -> tuple[Policy, str]:
    """The shipped/learned actor when ``model`` is given, else a seeded untrained actor of the shipped
    architecture (the cost of a decision does not depend on the weights)."""
    if model:
        return load_learned(model), model
    import torch

    from rltune_daemon.train.network import Actor

    torch.manual_seed(seed)
    actor = torch.jit.script(Actor(features.ACTOR_DIM, dim_hidden).eval())
    desc = f"untrained actor (hidden {dim_hidden})"
    return LearnedPolicy(actor, {"features": "sampled"}, "untrained"), desc


class _TimedPlacer:
    """Wraps a placer and adds up the seconds it spends."""

    def __init__(self, inner: Placer) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.solvers: list[str] = []

    def __call__(self, ctx: PlacementContext, rows: Any) -> PlacementResult:
        t0 = time.perf_counter()
        res = self.inner(ctx, rows)
        self.seconds += time.perf_counter() - t0
        self.solvers.append(res.solver)
        return res


def bench_decide(args: argparse.Namespace) -> int:
    import torch

    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--sizes {args.sizes!r}: expected comma-separated job counts, e.g. "
                        f"{DEFAULT_SIZES}") from None
    if not sizes or min(sizes) < 1:
        raise UserError("--sizes: give at least one positive job count")
    torch.set_num_threads(1)  # the daemon's setting: one core for the decision
    workload = load_from_args(args)
    policy, actor_desc = _policy(args.model, 64, args.seed)
    # run history, as the daemon has it from sacct: every run of the trace (users recur in the queue), so
    # hist_time costs what it costs live; learning it is not part of a decision (once per interval)
    runs = FinishedRuns.from_table(JobTable.from_jobs(workload.jobs, workload.cluster))
    history = new_history()
    history.learn_runs(runs)
    policy.learn_runs(runs)
    cfg = PlannerConfig(top_k=args.top_k)
    rows_out = []
    for n in sizes:
        snap = decision_snapshot(workload, n, args.seed)
        best: dict[str, float] = {}
        solvers: list[str] = []
        for _ in range(max(1, args.repeat)):
            # the daemon's own placer and CBC settings (wall-clock limit, planner.milp_time_limit)
            placer = _TimedPlacer(CountingPlacer("milp", PlannerSection().milp_time_limit))
            t0 = time.perf_counter()
            inp = inputs_from(snap)
            t1 = time.perf_counter()
            every = np.arange(len(inp.table), dtype=np.int64)
            view = QueueView(inp.table, every, snap.clock, inp.cluster, None, history)
            features.actor_features(view)
            t2 = time.perf_counter()
            policy.scores(view)
            t3 = time.perf_counter()
            plan(snap, policy, cfg, PlannerMemory(), placer)
            t4 = time.perf_counter()
            run = {"inputs_s": t1 - t0, "features_s": t2 - t1, "features_actor_s": t3 - t2,
                   "milp_s": placer.seconds, "plan_total_s": t4 - t3}
            best = run if not best or run["plan_total_s"] < best["plan_total_s"] else best
            solvers = placer.solvers
        rows_out.append({"pending": n, **{k: round(v, 4) for k, v in best.items()}, "placement": solvers})
        if not args.quiet:
            print(f"pending {n:>6}: plan {best['plan_total_s']:.3f}s (features {best['features_s']:.3f}s, "
                  f"features+actor {best['features_actor_s']:.3f}s, MILP {best['milp_s']:.3f}s)", flush=True)
    print_json({"bench": "decide", "trace": args.trace, "cluster_nodes": len(workload.cluster.nodes),
                "cluster_gpus": workload.cluster.total_gpus, "actor": actor_desc, "top_k": args.top_k,
                "repeat": args.repeat, "seed": args.seed, "results": rows_out, **machine()})
    return 0


def register(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = bsub.add_parser("decide", help="time one daemon decision (features + actor + MILP + plan) "
                                       "at several queue lengths")
    add_load_args(d, positional=False)
    d.add_argument("--sizes", default=DEFAULT_SIZES, help=f"pending-job counts (default {DEFAULT_SIZES})")
    d.add_argument("--model", type=str, default=None,
                   help="model directory (default: an untrained actor of the same architecture)")
    d.add_argument("--top-k", type=int, default=16, help="jobs the MILP places (default 16)")
    d.add_argument("--repeat", type=int, default=3, help="runs per size; the best is reported")
    d.add_argument("--quiet", action="store_true", help="JSON only")
    d.set_defaults(func=bench_decide)


__all__ = ["decision_snapshot", "register"]
