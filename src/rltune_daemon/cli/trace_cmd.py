"""``rltune trace``: inspect workloads (``list``, ``stats``), compare generators with the published
statistics they were fitted to (``fit``) and write any workload as plain CSV (``export``)."""

from __future__ import annotations

import argparse
from typing import Any

from rltune_daemon.cli.common import add_load_args, load_from_args, print_json
from rltune_daemon.traces import fit, trace_stats
from rltune_daemon.traces.export import write_cluster, write_csv
from rltune_daemon.traces.registry import describe_traces
from rltune_daemon.traces.stats import dropped_note, estimates_note, format_stats


def cmd_list(args: argparse.Namespace) -> int:
    names = describe_traces()
    if args.json:
        print_json(names)
    else:
        for name, summary in names.items():
            print(f"{name:<14} {summary}")
        print("(each name also works as --cluster NAME: that trace's default cluster under another trace)")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    stats = trace_stats(load_from_args(args))
    if args.json:
        print_json(stats)
    else:
        print(format_stats(stats))
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    report: dict[str, Any] = fit.report(args.name, seed=args.seed, jobs=args.jobs)
    if args.json:
        print_json(report)
    else:
        print(fit.markdown(report))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    workload = load_from_args(args)
    n = write_csv(workload, args.output)
    print(f"wrote {n} jobs to {args.output}")
    # the time_limit column is the model's output, not the trace's, unless the model is "trace"
    print(f"time limits: {estimates_note(workload)}")
    print(f"dropped at load: {dropped_note(workload.meta.get('dropped', {}), len(workload.jobs))}")
    if args.cluster_out:
        nodes = write_cluster(workload.cluster, args.cluster_out)
        print(f"wrote {nodes} nodes to {args.cluster_out} (load with --cluster {args.cluster_out})")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "trace", help="inspect, fit-check and export workloads", description=__doc__
    )
    sub = parser.add_subparsers(dest="trace_command", required=True)

    p = sub.add_parser("list", help="named traces")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("stats", help="jobs, span, arrival rate, GPU mix, runtime/limit percentiles, cluster")
    add_load_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("fit", help="generated vs published statistics (markdown tables for docs/traces.md)")
    p.add_argument("name", choices=("helios", "alibaba", "testbed"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=None, help="jobs to generate (default: the trace default)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fit)

    p = sub.add_parser("export", help="write a workload as plain CSV (loadable again as a trace file)")
    add_load_args(p)
    p.add_argument("-o", "--output", required=True, help="output CSV path")
    p.add_argument(
        "--cluster-out",
        default=None,
        metavar="PATH",
        help="also write the cluster as 'scontrol -o show node'-style lines",
    )
    p.set_defaults(func=cmd_export)
