"""FCFS contention of the named traces at their defaults: the numbers of docs/traces.md, "Contention
under FCFS".

Windows: ``rltune evaluate``'s own (``rltune_daemon.evaluate.heldout_windows``), ``--windows``
windows of ``--size`` consecutive jobs starting at ``numpy.random.default_rng(seed).integers(0,
len(held_out) - size + 1, windows)`` in ``split_by_time(w)[1]`` (the last 10 % by submit), submit times
shifted so each window starts at 0, each simulated from an idle cluster with ``simulate(window,
make_policy("fcfs"))`` (default ``SimConfig``: EASY backfill, placement effects on). Reported: the mean
over the windows of each window's metric, and the smallest and largest window mean wait.

    .venv/bin/python docs/scripts/contention.py          # windows: defaults, then alternatives (~20 s)
    .venv/bin/python docs/scripts/contention.py --full   # plus whole-trace philly at 1/16, 1/8, 1/4 (~2 min)
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from fractions import Fraction
from typing import Any

import numpy as np

from rltune_daemon.domain.workload import Workload
from rltune_daemon.evaluate import heldout_windows
from rltune_daemon.policies import make_policy
from rltune_daemon.sim import simulate
from rltune_daemon.traces import load_workload
from rltune_daemon.traces.philly import PHILLY_SCALE

TRACES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("philly", {}),
    ("helios", {}),
    ("alibaba", {}),
    ("testbed", {"jobs": 20480}),
)
# the alternatives the defaults were chosen against (rows marked "for comparison")
COMPARE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("philly", {"scale": "1/8"}),
    ("helios", {"vc_fit": "whole"}),
    ("alibaba", {"slice": "1/20"}),
)
FULL_SCALES = ("1/16", "1/8", "1/4")


def rebased(w: Workload) -> Workload:
    off = w.jobs[0].submit
    return w.with_jobs(tuple(dataclasses.replace(j, submit=j.submit - off) for j in w.jobs))


def windows_row(name: str, opts: dict[str, Any], windows: int, size: int, seed: int) -> list[str]:
    w = load_workload(name, seed=seed, **opts)
    _, wins = heldout_windows(w, windows, size, seed)
    runs = [simulate(rebased(win), make_policy("fcfs")).metrics for win in wins]
    mean = {
        k: float(np.mean([r[k] for r in runs]))
        for k in ("wait_mean", "wait_median", "wait_p95", "bsld", "utilization")
    }
    waits = [r["wait_mean"] for r in runs]
    label = f"`{name}`" + "".join(f" `{k}={v}`" for k, v in opts.items())
    return [
        label,
        f"{w.cluster.total_gpus}",
        f"{mean['wait_mean']:,.0f}",
        f"{min(waits):,.0f} .. {max(waits):,.0f}",
        f"{mean['wait_median']:,.0f}",
        f"{mean['wait_p95']:,.0f}",
        f"{mean['bsld']:,.1f}",
        f"{mean['utilization']:.2f}",
    ]


def full_row(scale: str, seed: int) -> list[str]:
    w = load_workload("philly", seed=seed, scale=scale)
    start = time.perf_counter()
    m = simulate(w, make_policy("fcfs")).metrics
    took = time.perf_counter() - start
    default = Fraction(scale) == Fraction(PHILLY_SCALE)
    return [
        f"{scale} (default)" if default else scale,
        f"{w.cluster.total_gpus}",
        f"{m['wait_mean']:,.0f}",
        f"{m['utilization']:.2f}",
        f"{took:.0f}",
    ]


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="also simulate the whole philly trace")
    args = ap.parse_args()
    head = [
        "trace",
        "GPUs",
        "mean wait (s)",
        "window mean wait, min .. max (s)",
        "median wait (s)",
        "p95 wait (s)",
        "BSLD",
        "utilisation",
    ]
    rows = [windows_row(name, opts, args.windows, args.size, args.seed) for name, opts in TRACES]
    for name, opts in COMPARE:
        row = windows_row(name, opts, args.windows, args.size, args.seed)
        rows.append([f"{row[0]} (for comparison)", *row[1:]])
    print(table(head, rows))
    if args.full:
        print()
        head = ["philly `scale`", "GPUs", "mean wait (s)", "utilisation", "simulation (s)"]
        print(table(head, [full_row(s, args.seed) for s in FULL_SCALES]))


if __name__ == "__main__":
    main()
