"""``rltune bench site``: ``rltune site`` on a history of N jobs, timed stage by stage. The history is a
generated trace (``testbed`` by default) run through the simulator under a site multifactor and written
out as the four exports a site gives (sacct with the simulated starts, ``scontrol show config``, nodes,
partitions), so the timing covers reading, the self-check and the counterfactual as a site runs them.
The history is simulated the way the self-check simulates (Slurm-like passes, no placement effects), so
its self-check is near-exact by construction: this times the work, it measures no fidelity."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from rltune_daemon.cli.common import machine, parse_opts, print_json
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.policies.slurm_priority import backfill_interval, cluster_weights
from rltune_daemon.sim import Simulator
from rltune_daemon.sim.config import SLURM_RESERVATIONS, SimConfig
from rltune_daemon.sim.controller import PolicyController
from rltune_daemon.site.exports import SACCT_FIELDS
from rltune_daemon.site.report import write_site
from rltune_daemon.site.run import SiteConfig, run_site
from rltune_daemon.slurm.history import sacct_time
from rltune_daemon.traces import load_workload
from rltune_daemon.traces.export import cluster_lines

CONFIG = """AccountingStorageType   = accounting_storage/slurmdbd
PriorityType            = priority/multifactor
PriorityFavorSmall      = No
PriorityMaxAge          = 7-00:00:00
PriorityWeightAge       = 1000
PriorityWeightFairShare = 0
PriorityWeightJobSize   = 1000
PriorityWeightPartition = 1000
PriorityWeightQOS       = 0
PriorityWeightTRES      = (null)
SchedulerParameters     = bf_interval=30
"""
EPOCH = 1_780_000_000.0


def register(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = bsub.add_parser("site", help="time rltune site on a generated history of N jobs")
    p.add_argument("--trace", default="testbed", help="a generated trace (default testbed)")
    p.add_argument("--jobs", type=int, default=50_000, help="jobs in the history (default 50,000)")
    p.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                   help="trace options, e.g. load=0.7 (a month a cluster kept up with, not a backlog)")
    p.add_argument("--models", type=Path, default=Path("models"))
    p.add_argument("--workers", type=int, default=0, help="processes (default: all cores)")
    p.add_argument("--keep", type=Path, default=None, help="keep the report in this folder")
    p.set_defaults(func=bench_site)


def write_exports(trace: str, jobs: int, folder: Path, opts: dict[str, str]) -> None:
    """The four files of a site whose Slurm is the simulator under ``CONFIG``'s multifactor."""
    wl = load_workload(trace, estimates="user", seed=0, **{"jobs": str(jobs), **opts})
    weights, _ = cluster_weights(CONFIG, 1.0)
    res = Simulator(wl, PolicyController(Multifactor(weights)),
                    SimConfig(effects=EffectsConfig.pure(), bf_reservations=SLURM_RESERVATIONS,
                              pass_period=backfill_interval(CONFIG), main_at_events=True)).run()
    rows = [SACCT_FIELDS.replace(",", "|")]
    for k, j in enumerate(wl.jobs):
        start = float(res.start[k])
        end = sacct_time(EPOCH + start + (j.runtime or 0.0)) if np.isfinite(start) else "Unknown"
        # what the job asked for, and nothing more: a node or CPU count it did not name would change
        # where it may run and its job-size factor
        tres = ",".join([*([f"cpu={j.cpus}"] if j.cpus else []), f"gres/gpu={j.gpus}",
                         *(f"gres/gpu:{t}={j.gpus}" for t in j.gpu_types[:1]),
                         *([f"node={j.nodes}"] if j.nodes else [])])
        rows.append("|".join([j.id, j.user or "u", "acct", j.partition or wl.cluster.partition_names[0],
                              "normal", sacct_time(EPOCH + j.submit),
                              sacct_time(EPOCH + start) if np.isfinite(start) else "Unknown", end,
                              "COMPLETED", tres, "",
                              _duration(j.time_limit), ""]))
    lines = cluster_lines(wl.cluster)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sacct.txt").write_text("\n".join(rows) + "\n")
    (folder / "config.txt").write_text(CONFIG)
    (folder / "nodes.txt").write_text("\n".join(ln for ln in lines if ln.startswith("NodeName")) + "\n")
    parts = [ln for ln in lines if ln.startswith("PartitionName")]
    (folder / "partitions.txt").write_text("\n".join(parts) + "\n")


def _duration(seconds: float) -> str:
    """A limit as sacct prints it, ``D-HH:MM:SS`` (to the second: the simulated site used exactly it)."""
    s = max(1, int(np.ceil(seconds)))
    return f"{s // 86400}-{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def bench_site(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="rltune-bench-site-"))
    try:
        t0 = time.perf_counter()
        write_exports(args.trace, args.jobs, tmp / "export", parse_opts(args.opt))
        made = time.perf_counter() - t0
        out = args.keep or tmp / "report"
        cfg = SiteConfig(out=out, minutes=0.0, source=tmp / "export", models=args.models, jobs=args.workers)
        t1 = time.perf_counter()
        site = run_site(cfg, f"rltune bench site --jobs {args.jobs}")
        write_site(site, out)
        seconds = time.perf_counter() - t1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ev = site["evaluation"]["config"]
    print_json({"bench": "site", "trace": args.trace, "opts": args.opt, "jobs": site["history"]["jobs"],
                "history_seconds": round(made, 1), "site_seconds": round(seconds, 1),
                "stages": {k: round(v, 1) for k, v in site["timings"].items()},
                "windows": ev["windows"], "window_size": ev["window_size"],
                "options": len(site["evaluation"]["policies"]),
                "self_check_wait_rel_error": site["fidelity"]["wait_rel_error"], **machine()})
    return 0
