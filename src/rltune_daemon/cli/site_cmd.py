"""``rltune site``: replay a site's own history, check the simulator against what its Slurm really did,
and say what to run (docs/site.md)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rltune_daemon.errors import UserError
from rltune_daemon.policies import BASELINES
from rltune_daemon.site.report import write_site
from rltune_daemon.site.run import SiteConfig, run_site


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("site", help="what the daemon would do on this cluster, from its own history")
    p.add_argument("--out", type=Path, default=Path("site-report"), help="where the report goes "
                   "(default ./site-report)")
    p.add_argument("--days", type=float, default=30.0, help="days of accounting to read (default 30)")
    p.add_argument("--minutes", type=float, default=30.0,
                   help="fine-tuning budget for a model of this site's own (default 30; 0: none)")
    p.add_argument("--from", dest="source", type=Path, default=None, metavar="DIR",
                   help="work from a saved folder (sacct.txt, config.txt, nodes.txt, partitions.txt) "
                        "instead of asking this machine's Slurm")
    p.add_argument("--export", type=Path, default=None, metavar="DIR",
                   help="save exactly what was read from Slurm into DIR (for --from elsewhere)")
    p.add_argument("--slurm-conf", default=None, metavar="FILE", help="slurm.conf of the cluster to ask "
                   "(default: the Slurm clients' own)")
    p.add_argument("--models", type=Path, default=Path("models"),
                   help="folder of shipped models to judge (default ./models)")
    p.add_argument("--heuristics", default="sjf,qssf",
                   help="heuristics the daemon could apply without a model (default sjf,qssf)")
    p.add_argument("--engine", default="local", metavar="local|slurm[:PARTITION]",
                   help="where the simulations run, as rltune evaluate's --engine")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=0, help="worker processes (default: all cores)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.days <= 0 or args.minutes < 0:
        raise UserError("--days must be positive and --minutes 0 or more")
    heuristics = tuple(h.strip() for h in args.heuristics.split(",") if h.strip())
    unknown = [h for h in heuristics if h not in BASELINES]
    if unknown:
        raise UserError(f"--heuristics {','.join(unknown)}: choose from {', '.join(BASELINES)}")
    cfg = SiteConfig(out=args.out, days=args.days, minutes=args.minutes, source=args.source,
                     export=args.export, slurm_conf=args.slurm_conf, models=args.models,
                     heuristics=heuristics, seed=args.seed, engine=args.engine, jobs=args.jobs)
    command = "rltune " + " ".join(shlex.quote(a) for a in args.argv)
    site = run_site(cfg, command)
    paths = write_site(site, args.out)
    fid = site["fidelity"]
    print(f"self-check: mean wait error {fid['wait_rel_error']:+.1%}, start-order Spearman "
          f"{fid['start_spearman']:.3f}, {fid['unplaceable']['share']:.1%} of jobs not placed")
    print(site["verdict"]["line"])
    print(f"wrote {paths[0]}, {paths[1]}, {paths[2]}")
    return 0
