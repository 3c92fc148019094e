"""CBC's ``-threads 1`` mode against its serial code, on the simulator's own placement instances.

Usage: .venv/bin/python docs/scripts/cbc_threads.py [TRACE] [POLICY] [WINDOWS]
(default: alibaba rltune:models/alibaba-sjf 4,6,7,8,9 -- training windows of ``rltune evaluate --split
train --windows 30 --window-size 1024 --seed 0``, daemon mode, EASY backfill).

Every MILP instance the simulation meets is solved twice with the simulator's limit (0.05 s): first as
the placer did before 2026-11-24 (``threads 1``, wall-clock limit), then as it does now (serial code, CPU
limit); the simulation goes on with the second answer. Prints per mode the solves, the stalls (a solve
over 1 s), the solves without a proven optimum (``timeout`` fallbacks), median/p99/max seconds, and the
instances where both modes proved an optimum but chose different options (expected: 0).
"""

from __future__ import annotations

import sys
import tempfile
import time
from typing import Any

import numpy as np
import pulp

from rltune_daemon.evaluate.runner import _STATE, EvalConfig, _init, make_controller
from rltune_daemon.placement import milp
from rltune_daemon.sim.engine import Simulator

MODES = ("threads 1, elapsed", "serial, cpu")


def main() -> int:
    trace = sys.argv[1] if len(sys.argv) > 1 else "alibaba"
    policy = sys.argv[2] if len(sys.argv) > 2 else "rltune:models/alibaba-sjf"
    windows = [int(w) for w in (sys.argv[3] if len(sys.argv) > 3 else "4,6,7,8,9").split(",")]
    seconds: dict[str, list[float]] = {m: [] for m in MODES}
    unproven = dict.fromkeys(MODES, 0)
    differ = 0

    def paired(prob: pulp.LpProblem, opts: milp.MilpOptions) -> None:
        nonlocal differ
        chosen = []
        for mode in MODES:
            solver = milp.cbc_command(opts)
            if mode == MODES[0]:
                solver.optionsDict.update(threads=1, timeMode="elapsed")
            with tempfile.TemporaryDirectory(prefix="rltune-cbc-") as scratch:
                solver.tmpDir = scratch
                t0 = time.perf_counter()
                prob.solve(solver)
                seconds[mode].append(time.perf_counter() - t0)
            proven = prob.status == pulp.LpStatusOptimal and prob.sol_status == pulp.LpSolutionOptimal
            unproven[mode] += not proven
            picked = sorted(v.name for v in prob.variables() if (v.value() or 0.0) > 0.5)
            chosen.append(picked if proven else None)
        differ += None not in chosen and chosen[0] != chosen[1]

    milp._solve_lp = paired  # type: ignore[assignment]
    cfg = EvalConfig(trace=trace, policies=(policy,), windows=30, window_size=1024, seed=0, split="train")
    _init(cfg)
    for k in windows:
        ctl = make_controller(policy, _STATE["train"], cfg)
        t0 = time.perf_counter()
        Simulator(_STATE["windows"][k], ctl, cfg.sim_config()).run()
        print(f"window {k}: {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"{trace} {policy} windows {windows}")
    for mode in MODES:
        s: Any = np.array(seconds[mode])
        print(f"  {mode:>18}: {len(s)} solves, {int((s > 1).sum())} over 1 s, {unproven[mode]} without a "
              f"proven optimum; median {np.median(s) * 1e3:.1f} ms, p99 {np.quantile(s, 0.99) * 1e3:.1f} ms, "
              f"max {s.max():.2f} s, total {s.sum():.0f} s")
    print(f"  both proved an optimum but chose differently: {differ}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
