"""Before judging a site's Slurm, check that the simulator reproduces it: the whole history simulated
under the site's own multifactor (and its partitions, tiers and backfill) against the starts Slurm
recorded. Reported: the mean wait error (simulated minus recorded, over recorded), the same per job-size
class, the rank correlation of start times, and the share of jobs the simulator could not place. The
paper's default formula is scored the same way, so the report shows what the site's own configuration
is worth to the check.
"""

from __future__ import annotations

import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64
from rltune_daemon.harm import wait_by_class
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.sim.config import SimConfig
from rltune_daemon.sim.controller import PolicyController
from rltune_daemon.sim.engine import Simulator
from rltune_daemon.site.history import History
from rltune_daemon.stats import rel_error, spearman

SPEARMAN_MIN = 0.9  # below this the simulator orders the site's jobs too differently to judge orders


def self_check(history: History, site: Multifactor, paper: Multifactor, config: SimConfig,
               workers: int = 2) -> dict[str, Any]:
    """``fidelity`` of results.json: the site's formula, and the default formula under ``paper``; the two
    whole-history simulations side by side when ``workers`` > 1 (a month of a busy cluster is minutes)."""
    if workers > 1:
        # spawn, not fork: a parent with torch's threads running must not be forked
        with ProcessPoolExecutor(2, multiprocessing.get_context("spawn")) as pool:
            mine, theirs = pool.map(_score, [history, history], [site, paper], [config, config])
    else:
        mine, theirs = _score(history, site, config), _score(history, paper, config)
    mine["default_formula"] = {k: v for k, v in theirs.items()
                               if k in ("wait_mean_sim", "wait_rel_error", "start_spearman")}
    return mine


def _score(history: History, policy: Multifactor, config: SimConfig) -> dict[str, Any]:
    wl = history.workload
    res = Simulator(wl, PolicyController(policy), config).run()
    submit = np.array([j.submit for j in wl.jobs], dtype=np.float64)
    sizes = np.array([j.gpus for j in wl.jobs], dtype=np.int64)
    real_wait = history.recorded_start - submit
    sim_wait = res.start - submit
    placed = ~np.isnan(sim_wait)
    real_mean = float(real_wait[placed].mean()) if placed.any() else math.nan
    sim_mean = float(sim_wait[placed].mean()) if placed.any() else math.nan
    ran = len(wl.jobs) + history.unplaceable
    return {
        "jobs": len(wl.jobs),
        "wait_mean_recorded": real_mean,
        "wait_mean_sim": sim_mean,
        "wait_rel_error": rel_error(sim_mean, real_mean),
        "start_spearman": spearman(history.recorded_start, res.start),
        "by_size": _by_size(real_wait[placed], sim_wait[placed], sizes[placed]),
        "unplaceable": {"at_load": history.unplaceable, "in_simulation": int((~placed).sum()),
                        "share": (history.unplaceable + int((~placed).sum())) / ran if ran else 0.0},
    }


def _by_size(real: F64, sim: F64, sizes: Any) -> dict[str, dict[str, float]]:
    r, s = wait_by_class(real, sizes), wait_by_class(sim, sizes)
    return {c: {"jobs": r[c]["jobs"], "wait_mean_recorded": r[c]["wait_mean"],
                "wait_mean_sim": s[c]["wait_mean"],
                "wait_rel_error": rel_error(s[c]["wait_mean"], r[c]["wait_mean"])} for c in r if c in s}


def trust(fidelity: dict[str, Any], gain: float) -> str:
    """Why the check cannot back a change of ``gain`` (relative mean-wait difference to multifactor),
    or "" when it can: the simulator's own error must be smaller than the difference it judges, and its
    start order close to Slurm's."""
    err = abs(float(fidelity["wait_rel_error"]))
    rho = float(fidelity["start_spearman"])
    if not math.isfinite(err) or not math.isfinite(rho):
        return "the self-check could not compare the simulated waits with the recorded ones"
    if rho < SPEARMAN_MIN:
        return (f"the simulator orders the site's jobs unlike its Slurm (start Spearman {rho:.2f} < "
                f"{SPEARMAN_MIN})")
    if err >= abs(gain):
        return (f"the simulator's own wait error ({err:.1%}) is not smaller than the difference it would "
                f"judge ({abs(gain):.1%})")
    return ""
