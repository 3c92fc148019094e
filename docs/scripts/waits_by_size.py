"""Mean wait by job shape (1 GPU, 2 GPUs, more on one node, several nodes) for each policy, on the
windows ``rltune evaluate`` would use: who pays for a policy's mean. Means over all windows hide that
multifactor's testbed wait is mostly its two-node jobs' (docs/results/testbed-fresh/RULE.md).

    python docs/scripts/waits_by_size.py --trace testbed --opt jobs=100000 --seed 2 \\
        --split train-recent --windows 80 --policies fcfs,multifactor
"""

from __future__ import annotations

import argparse
import multiprocessing
from typing import Any

import numpy as np

from rltune_daemon.cli.common import parse_opts
from rltune_daemon.evaluate.runner import _STATE, EvalConfig, _init, _run

SHAPES = ("1 GPU", "2 GPUs", "3+ GPUs, one node", "several nodes")


def shape(gpus: int, nodes: int) -> str:
    if nodes >= 2:
        return SHAPES[3]
    return SHAPES[min(gpus, 3) - 1] if gpus >= 1 else SHAPES[0]


def run(task: tuple[str, int]) -> tuple[str, list[str], list[float]]:
    """One policy on one window, as ``rltune evaluate`` runs it, with each job's shape."""
    spec, k = task
    out = _run(spec, k)
    return spec, [shape(j.gpus, j.nodes) for j in _STATE["windows"][k].jobs], out["job_waits"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--policies", required=True)
    ap.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="train")
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--window-size", type=int, default=1024)
    a = ap.parse_args()
    policies = tuple(a.policies.split(","))
    cfg = EvalConfig(trace=a.trace, policies=policies, windows=a.windows, window_size=a.window_size,
                     seed=a.seed, split=a.split, opts=parse_opts(a.opt))
    tasks = [(p, k) for p in policies for k in range(a.windows)]
    with multiprocessing.get_context("spawn").Pool(initializer=_init, initargs=(cfg,)) as pool:
        out = pool.map(run, tasks)
    print("| policy | " + " | ".join(f"{s}: jobs, mean wait (s)" for s in SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    for p in policies:
        by: dict[str, list[Any]] = {s: [] for s in SHAPES}
        for spec, shapes, waits in out:
            if spec == p:
                for s, w in zip(shapes, waits, strict=True):
                    by[s].append(w)
        cells = [f"{len(by[s])}, {np.nanmean(by[s]):.0f}" if by[s] else "0, -" for s in SHAPES]
        print(f"| `{p}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
