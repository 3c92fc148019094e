"""One Markdown table of who pays: every daemon policy against multifactor on each evaluated workload,
with the no-harm criterion's figures beside the means (docs/results.md, "No job pays for the others").

    python docs/scripts/no_harm_table.py docs/results/no-harm/{testbed,lublin}-easy models/*

A model directory stands for the held-out record in its manifest (``rltune heldout``): multifactor, its
base policy applied by the daemon (``daemon:<base>``) and the model, on its own trace's windows.

Each row: mean BSLD and wait with the paired difference to multifactor (± one standard error over the
windows, and its verdict at 2), p99 wait, GPU utilisation over the makespan and over the arrivals, the
largest ratio of a size class's mean wait to multifactor's (classes with at least 50 jobs), and the
no-harm line. Several runs of one workload are merged when they ran the same windows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rltune_daemon.evaluate.paired import SAME_WINDOWS
from rltune_daemon.evaluate.verdict import LEAVE, harm_of, judge


def from_manifest(model: Path) -> dict[str, Any]:
    """A model's held-out record in the shape of ``rltune evaluate``'s results."""
    manifest = json.loads((model / "manifest.json").read_text())
    rec = manifest["heldout"]
    names = {"multifactor": "multifactor", "daemon_base": f"daemon:{manifest['base_policy']}",
             "model": f"rltune:models/{model.name}"}
    policies = {}
    for key, name in names.items():
        if key in rec:
            per = rec["per_window"][key]
            policies[name] = {**rec[key], "per_window": [{"bsld": b, "wait_mean": w} for b, w in
                                                          zip(per["bsld"], per["wait_mean"], strict=True)]}
    return {"config": {"trace": manifest["trace"], "bf_reservations": rec.get("bf_reservations", 1),
                       "resource": rec.get("resource", "gpu"), "seed": rec.get("seed", 0),
                       "windows": rec["windows"], "window_size": rec["window_size"], "model": True},
            "policies": policies}


def merged(runs: list[Path]) -> dict[str, dict[str, Any]]:
    """Results per (workload, backfill), runs of the same windows merged."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        if (run / "manifest.json").is_file():
            data = from_manifest(run)
            cfg = data["config"]
            key = f"{cfg['trace']}, {'EASY' if cfg['bf_reservations'] == 1 else 'Slurm-like reservations'}"
            out[f"{key} ({run.name}'s record)"] = data
            continue
        data = json.loads((run / "results.json").read_text())
        cfg = data["config"]
        bf = int(cfg.get("bf_reservations", 1))
        key = f"{Path(cfg['trace']).name}, {'EASY' if bf == 1 else f'{bf} reservations'}"
        have = out.setdefault(key, data)
        if have is not data:
            moved = [k for k in SAME_WINDOWS if have["config"].get(k) != data["config"].get(k)]
            if moved:
                raise SystemExit(f"{run}: other windows than the first run of {key} ({', '.join(moved)})")
            have["policies"].update(data["policies"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="rltune evaluate output directories")
    args = ap.parse_args()
    print("| workload | policy | BSLD | wait (s) | vs multifactor: BSLD, wait | p99 wait (s) | GPU util / "
          "arrivals | worst class | no harm |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key, r in merged(args.runs).items():
        pols = r["policies"]
        mf = pols[LEAVE]
        print(f"| {key} | `multifactor` | {mf['bsld']:.2f} | {mf['wait_mean']:.0f} | | "
              f"{mf['wait_p99']:.0f} | {mf['utilization']:.3f} / {mf['utilization_arrival']:.3f} | | |")
        for name, m in pols.items():
            if name == LEAVE:
                continue
            verdict, text = judge(r, name, LEAVE)
            h = harm_of(r, name) or {}
            classes = h.get("classes", {})
            worst = max(classes.items(), key=lambda kv: kv[1]["wait_mean"] / max(kv[1]["reference"], 1.0),
                        default=None)
            worst_text = (f"{worst[0]}: {worst[1]['wait_mean'] / max(worst[1]['reference'], 1.0):.2f}×"
                          if worst else "")
            judged = "yes" if h.get("ok") else "no: " + "; ".join(h.get("failures", []))
            print(f"| {key} | `{name}` | {m['bsld']:.2f} | {m['wait_mean']:.0f} | {text} ({verdict}) | "
                  f"{m['wait_p99']:.0f} | {m['utilization']:.3f} / {m['utilization_arrival']:.3f} | "
                  f"{worst_text} | {judged} |")


if __name__ == "__main__":
    main()
