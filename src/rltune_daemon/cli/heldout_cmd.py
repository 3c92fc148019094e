"""``rltune heldout``: record a trained model's held-out result in its manifest (for a model trained
with ``--heldout-windows 0`` and chosen on training windows first)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rltune_daemon.cli.common import print_json
from rltune_daemon.policies.learned import model_identity, read_manifest
from rltune_daemon.policies.standing import standing
from rltune_daemon.train.heldout import record_heldout


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("heldout", help="measure a model against its base policy on its trace's held-out "
                                       "windows and record the result in its manifest")
    p.add_argument("model", type=Path, help="model directory, e.g. models/testbed-multifactor")
    p.add_argument("--windows", type=int, default=10, help="held-out windows (default 10, as training)")
    p.add_argument("--window-size", type=int, default=1024, help="jobs per window (default 1024)")
    p.add_argument("--seed", type=int, default=None,
                   help="which held-out windows (default: the model's training seed, as training draws them)")
    p.add_argument("--bf-reservations", type=int, default=None, metavar="N",
                   help="the simulator's backfill (default: the one the model was trained under; 1 is EASY, "
                        "500 Slurm-like)")
    p.add_argument("--jobs", type=int, default=0, help="worker processes (default: all cores)")
    p.add_argument("--replace", action="store_true", help="measure again a model that already records one")
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.set_defaults(func=heldout)


def heldout(args: argparse.Namespace) -> int:
    rec = record_heldout(args.model, args.windows, args.window_size, args.seed, args.bf_reservations,
                         args.jobs, args.replace, progress=sys.stderr.isatty())
    if args.json:
        print_json(rec)
        return 0
    identity = model_identity(args.model)
    backfill = "EASY backfill" if rec["bf_reservations"] == 1 else f"{rec['bf_reservations']} reservations"
    base = identity["base_policy"]
    m, b, mf = rec["model"], rec.get("daemon_base", rec["base"]), rec["multifactor"]
    print(f"{args.model} on {identity['trace']}: {rec['windows']} held-out windows x {rec['window_size']} "
          f"jobs (seed {rec['seed']}, {backfill}): model BSLD {m['bsld']:.2f}, wait {m['wait_mean']:.0f} s; "
          f"{'daemon:' * ('daemon_base' in rec)}{base} {b['bsld']:.2f}, {b['wait_mean']:.0f} s"
          + ("" if base == "multifactor" else f"; multifactor {mf['bsld']:.2f}, {mf['wait_mean']:.0f} s")
          + "; recorded in its manifest")
    where = standing(read_manifest(args.model))
    if where.reason:
        print(f"warning: {where.reason}; the daemon runs {where.instead} instead unless "
              "run_model_behind_base = true")
    return 0
