"""``rltune compare``: is one evaluated policy ahead of another on the same windows, beyond noise?"""

from __future__ import annotations

import argparse

from rltune_daemon.cli.common import print_json
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.paired import METRICS, load_side, overall, paired_diffs, side_harm
from rltune_daemon.stats import SIGMA_DEFAULT


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compare", help="paired comparison of two evaluated policies, with a tie band")
    p.add_argument("a", metavar="A", help="RESULTS[#POLICY]: an 'rltune evaluate' results.json (or its "
                                          "directory) and the policy; POLICY may be left out if it holds one")
    p.add_argument("b", metavar="B", help="the same for the policy A is compared with")
    p.add_argument("--sigma", type=float, default=SIGMA_DEFAULT,
                   help="standard errors a mean per-window difference must exceed to count as lower or "
                        f"higher; inside the band it is a tie (default {SIGMA_DEFAULT:g})")
    p.add_argument("--metrics", default=",".join(METRICS), help="comma-separated per-window metrics")
    p.add_argument("--relative", action="store_true",
                   help="take each window's difference as a fraction of B's value there, so that congested "
                        "windows weigh no more than quiet ones (printed in per cent)")
    p.add_argument("--busiest", type=int, default=0, metavar="N",
                   help="compare on the N windows where the --by policy has the highest BSLD only (default: "
                        "all windows)")
    p.add_argument("--by", default=None, metavar="RESULTS#POLICY",
                   help="with --busiest: the policy that ranks the windows, evaluated on the same windows "
                        "and influenced by neither A nor B (default: B)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=compare)


def compare(args: argparse.Namespace) -> int:
    a, b = load_side(args.a), load_side(args.b)
    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    if args.by and not args.busiest:
        raise UserError("--by ranks windows for --busiest N: give --busiest too, or leave --by out")
    by = (load_side(args.by) if args.by else b, args.busiest) if args.busiest else None
    diffs = paired_diffs(a, b, metrics, args.sigma, args.relative, by)
    n_windows = by[1] if by else len(a.windows)
    verdict = overall(diffs)
    harmed = side_harm(a, b, args.sigma)  # over all shared windows: the criterion is not a subset's
    if args.json:
        print_json({"a": {"path": str(a.path), "policy": a.policy},
                    "b": {"path": str(b.path), "policy": b.policy},
                    "windows": n_windows, "sigma": args.sigma, "relative": args.relative,
                    "verdict": verdict, "metrics": [vars(d) for d in diffs],
                    "no_harm": harmed.as_json() if harmed is not None else None})
        return 0
    print(f"A: {a.policy} ({a.path})\nB: {b.policy} ({b.path})\n"
          + (f"the {by[1]} of {len(a.windows)} windows where {by[0].policy} has the highest BSLD" if by else
             f"{len(a.windows)} windows")
          + f"; a difference counts beyond {args.sigma:g} standard errors"
          + ("; differences per window as a per cent of B's value" if args.relative else ""))
    head = "(A - B) / B" if args.relative else "A - B"
    print(f"{'metric':<12}{'A':>12}{'B':>12}{head:>13}{'SE':>10}  A is")
    for d in diffs:
        diff, se = (f"{100 * d.diff:>+12.2f}%", f"{100 * d.se:>9.2f}%") if args.relative else \
            (f"{d.diff:>+13.3f}", f"{d.se:>10.3f}")
        print(f"{d.metric:<12}{d.a:>12.3f}{d.b:>12.3f}{diff}{se}  {d.verdict}")
    print(f"verdict: A is {verdict} than B" if verdict in ("better", "worse") else
          f"verdict: {verdict}")
    if harmed is None:
        print("no harm: not judged (a results file predates the per-class, p99 and utilisation figures; "
              "re-run 'rltune evaluate')")
    else:
        print("no harm: against B, A makes no size class wait longer, the tail no longer and the GPUs no "
              "idler" if harmed.ok else "harm: against B, A: " + "; ".join(harmed.failures))
    return 0
