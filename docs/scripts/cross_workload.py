"""Every shipped model on every workload's held-out windows, next to what admins run: one Markdown table
from the ``rltune evaluate`` results of each workload (docs/results/cross-workload/<trace>).

Each cell is the model's mean BSLD / mean wait on that workload and its verdict against multifactor and
against ``daemon:sjf`` (``rltune compare``'s rule: 2 standard errors of the per-window difference;
better = no metric higher, one lower). A model's home workload, the one it was trained on, is marked *.

    python docs/scripts/cross_workload.py docs/results/cross-workload/{testbed,philly} \
        docs/results/{helios,alibaba} docs/results/cross-workload/{helios,alibaba}

Several runs of one workload are merged when they ran the same windows (``rltune compare``'s check), so
a run of the other workloads' models can sit beside the published held-out table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rltune_daemon.evaluate.paired import SAME_WINDOWS
from rltune_daemon.evaluate.verdict import judge

REFERENCES = ("multifactor", "daemon:sjf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="rltune evaluate output directories, one per workload")
    args = ap.parse_args()
    results: dict[str, Any] = {}
    for run in args.runs:
        data = json.loads((run / "results.json").read_text())
        have = results.setdefault(data["config"]["trace"], data)
        if have is not data:
            moved = [k for k in SAME_WINDOWS if have["config"].get(k) != data["config"].get(k)]
            if moved:
                raise SystemExit(f"{run}: other windows than the first run of {data['config']['trace']} "
                                 f"({', '.join(moved)})")
            have["policies"].update(data["policies"])
            have["config"]["models"].update(data["config"]["models"])
    traces = [Path(t).name for t in results]  # a file's name, not where it lay on the machine that ran it
    models = sorted({p for r in results.values() for p in r["policies"] if p.startswith("rltune:")})
    print("| policy | " + " | ".join(traces) + " |")
    print("|---|" + "---|" * len(traces))
    for ref in REFERENCES:
        cells = [f"{r['policies'][ref]['bsld']:.2f} / {r['policies'][ref]['wait_mean']:.0f}"
                 for r in results.values()]
        print(f"| `{ref}` | " + " | ".join(cells) + " |")
    wins = {m: 0 for m in models}
    for m in models:
        cells = []
        for trace, r in results.items():
            pols = r["policies"]
            home = r["config"]["models"][m].get("trace") == trace
            v = [judge(r, m, ref)[0] for ref in REFERENCES]
            wins[m] += v[0] == "better"
            cells.append(f"{pols[m]['bsld']:.2f} / {pols[m]['wait_mean']:.0f}{' *' if home else ''} "
                         f"({v[0]}; {v[1]})")
        print(f"| `{m.removeprefix('rltune:')}` | " + " | ".join(cells) + " |")
    print()
    print("Workloads where each model is better than multifactor: " +
          ", ".join(f"`{m.removeprefix('rltune:')}` {n} of {len(traces)}" for m, n in wins.items()))


if __name__ == "__main__":
    main()
