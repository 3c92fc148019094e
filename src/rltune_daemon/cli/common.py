"""Shared CLI plumbing: error handling and JSON output."""

from __future__ import annotations

import argparse
import json
import os
import platform
from typing import Any

from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import UserError
from rltune_daemon.traces import load_workload


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


def machine() -> dict[str, Any]:
    """Where a benchmark ran, recorded next to its timings."""
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine()}


def parse_opts(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"--opt wants key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def load_from_args(args: argparse.Namespace) -> Workload:
    return load_workload(
        args.trace, estimates=args.estimates, seed=args.seed, cluster=args.cluster, **parse_opts(args.opt)
    )


def add_bf_reservations(p: argparse.ArgumentParser) -> None:
    """``--bf-reservations``, the simulator's backfill (``SimConfig.bf_reservations``), for every command."""
    p.add_argument("--bf-reservations", type=int, default=1, metavar="N",
                   help="how many blocked jobs of each partition the simulator's backfill reserves for in a "
                        "pass: 1 (default) is EASY backfill, the head only, as every published number; "
                        "Slurm's sched/backfill reserves for every job it tests (bf_max_job_test, 500)")


def add_load_args(p: argparse.ArgumentParser, positional: bool = True) -> None:
    """Options that say which workload to load; ``positional`` False makes the trace ``--trace``."""
    what = "trace name (see 'rltune trace list') or a .swf / sacct -P / CSV file"
    if positional:
        p.add_argument("trace", help=what)
    else:
        p.add_argument("--trace", required=True, help=what)
    p.add_argument(
        "--estimates",
        choices=("oracle", "user", "trace"),
        default=None,
        help="requested-time model (default: the file's own limits if any, else user)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for generators and the estimate model")
    p.add_argument(
        "--cluster",
        default=None,
        metavar="PATH|NAME",
        help="cluster file (CSV prefix,count,gpu_type,gpus,cpus,mem_mb[,partition] or "
        "'scontrol -o show node' output), or a bundled trace's name for its cluster "
        "(see 'rltune trace list')",
    )
    p.add_argument(
        "--opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="trace option, e.g. scale=1/4, jobs=5000, load=0.9, slice=1/50 (repeatable)",
    )
