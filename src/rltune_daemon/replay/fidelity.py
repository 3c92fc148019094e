"""Sim vs real, per arm: mean wait and BSLD on both sides, their relative error, the rank correlation
of per-job start times, and whether each arm's difference to multifactor has the same sign in both.

Both sides are measured the same way (``sim.metrics.summarize``): wait from each side's own start, and
run time from the trace. Slurm's clock has 1-s resolution, i.e. ``S`` trace seconds: a 2-minute job
shows as 1 to 3 s at S = 60, so the real run time would add noise, not information, to BSLD and JCT.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64
from rltune_daemon.sim.metrics import summarize
from rltune_daemon.stats import rel_error, spearman

REFERENCE = "multifactor"








def metrics(submit: F64, start: F64, runtime: F64, gpus: F64, total_gpus: int) -> dict[str, Any]:
    """Evaluate's metrics with the trace's run time (see module docstring)."""
    return summarize(submit, start, start + runtime, gpus, total_gpus)


def arm_fidelity(real: dict[str, Any], sim: dict[str, Any], real_start: F64, sim_start: F64
                 ) -> dict[str, Any]:
    return {
        "wait_mean_real": real["wait_mean"], "wait_mean_sim": sim["wait_mean"],
        "wait_rel_error": rel_error(sim["wait_mean"], real["wait_mean"]),
        "bsld_real": real["bsld"], "bsld_sim": sim["bsld"],
        "bsld_rel_error": rel_error(sim["bsld"], real["bsld"]),
        "start_spearman": spearman(real_start, sim_start),
    }


def _sign(x: float, tol: float = 1e-9) -> int:
    return 0 if abs(x) <= tol else (1 if x > 0 else -1)


def sign_agreement(real: dict[str, dict[str, Any]], sim: dict[str, dict[str, Any]],
                   reference: str = REFERENCE) -> dict[str, dict[str, Any]]:
    """Per arm: its difference to ``reference`` in wait and BSLD, real and simulated, and whether the
    two have the same sign (a tie counts as its own sign)."""
    out: dict[str, dict[str, Any]] = {}
    if reference not in real or reference not in sim:
        return out
    for arm in real:
        if arm == reference or arm not in sim:
            continue
        entry: dict[str, Any] = {}
        for key in ("wait_mean", "bsld"):
            d_real = real[arm][key] - real[reference][key]
            d_sim = sim[arm][key] - sim[reference][key]
            entry[f"{key}_vs_multifactor_real"] = d_real
            entry[f"{key}_vs_multifactor_sim"] = d_sim
            entry[f"{key}_sign_agrees"] = _sign(d_real) == _sign(d_sim)
        entry["sign_agrees"] = entry["wait_mean_sign_agrees"] and entry["bsld_sign_agrees"]
        out[arm] = entry
    return out


def summarize_seeds(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """An arm's fidelity over seeds: means of both sides, the relative error of the means, the mean
    and worst per-seed error and Spearman, and the per-seed rows."""
    wr = float(np.mean([s["wait_mean_real"] for s in per_seed]))
    ws = float(np.mean([s["wait_mean_sim"] for s in per_seed]))
    br = float(np.mean([s["bsld_real"] for s in per_seed]))
    bs = float(np.mean([s["bsld_sim"] for s in per_seed]))
    errs = [s["wait_rel_error"] for s in per_seed]
    rho = [s["start_spearman"] for s in per_seed]
    return {
        "wait_mean_real": wr, "wait_mean_sim": ws, "wait_rel_error": rel_error(ws, wr),
        "wait_rel_error_worst_seed": float(max(errs, key=abs)),
        "bsld_real": br, "bsld_sim": bs, "bsld_rel_error": rel_error(bs, br),
        "start_spearman": float(np.mean(rho)), "start_spearman_min": float(np.min(rho)),
        "per_seed": per_seed,
    }
