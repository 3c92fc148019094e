"""results.json of a replay without Slurm: real times made up from a simulation, so the schema, the
metric conversion (Slurm seconds x speedup) and the fidelity section can be checked exactly."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from test_replay_fidelity import CONFIG

from rltune_daemon.policies.slurm_priority import cluster_weights
from rltune_daemon.replay.arms import parse_arms
from rltune_daemon.replay.collect import JobTimes
from rltune_daemon.replay.report import build_results, write_results
from rltune_daemon.replay.run import ArmRun, ReplayConfig, SeedResult, submission_plan
from rltune_daemon.replay.simulate import simulate
from rltune_daemon.replay.submit import Submitted
from rltune_daemon.replay.window import ReplayWindow, replay_window

SPEEDUP = 60.0
T0 = 1_800_000_000.0


def _cfg(**kw: object) -> ReplayConfig:
    base: dict[str, object] = {"arms": ("multifactor", "daemon:sjf"), "seeds": (0,), "window_size": 24,
                               "speedup": SPEEDUP, "opts": {"jobs": "400"}}
    return ReplayConfig(**{**base, **kw})  # type: ignore[arg-type]


def _window(seed: int = 0) -> ReplayWindow:
    return replay_window(_cfg(seeds=(seed,)).eval_config(seed), SPEEDUP)


def _fake_run(arm: str, win: ReplayWindow, start: np.ndarray, shift: float = 0.0) -> ArmRun:
    """Slurm's view of a run whose trace-time starts are ``start`` (+ ``shift`` trace seconds each)."""
    w, _ = cluster_weights(CONFIG, SPEEDUP)
    subs, times = [], {}
    for i, j in enumerate(win.window.jobs):
        jid = str(100 + i)
        subs.append(Submitted(j.id, jid, T0 + j.submit / SPEEDUP, ("sbatch", j.id)))
        st = T0 + (start[i] + shift) / SPEEDUP
        times[jid] = JobTimes(jid, state="COMPLETED", submit=T0 + j.submit / SPEEDUP, start=st,
                              end=st + (j.runtime or 0) / SPEEDUP, nodes="p100-1")
    return ArmRun(arm=arm, seed=win.seed, t0=T0, submitted=subs, times=times, wall_seconds=1.0, weights=w,
                  notes=[])


def test_submission_plan_is_a_function_of_the_seed() -> None:
    a, b, c = _window(0), _window(0), _window(1)
    plan_a = submission_plan(a, SPEEDUP, "gpu", a.window.cluster)
    plan_b = submission_plan(b, SPEEDUP, "gpu", b.window.cluster)
    assert [(t, at, r.argv()) for t, at, r in plan_a] == [(t, at, r.argv()) for t, at, r in plan_b]
    assert [r.argv() for *_, r in plan_a] != [r.argv() for *_, r in submission_plan(c, SPEEDUP, "gpu",
                                                                                  c.window.cluster)]
    ats = [at for _, at, _ in plan_a]
    assert ats == sorted(ats) and ats[0] == 0.0
    # every limit is already a whole number of scaled minutes: both sides see identical limits
    for j in a.window.jobs:
        assert (j.time_limit / SPEEDUP / 60).is_integer()
        assert j.runtime is not None and j.runtime <= j.time_limit


def test_results_schema_and_exact_fidelity(tmp_path: Path) -> None:
    cfg = _cfg()
    arms = parse_arms(",".join(cfg.arms))
    win = _window(0)
    w, _ = cluster_weights(CONFIG, SPEEDUP)
    res = SeedResult(0, win)
    for arm in arms:
        res.sim[arm.spec] = simulate(arm, win, w, cfg.trace)
        # "real" = the simulation itself for multifactor; 600 trace seconds later for every job of sjf
        res.real[arm.spec] = _fake_run(arm.spec, win, res.sim[arm.spec].start,
                                       0.0 if arm.spec == "multifactor" else 600.0)
    data = build_results(cfg, arms, [res], 12.0)
    for name in cfg.arms:
        for key in ("bsld", "wait_mean", "jct_mean", "utilization", "makespan", "per_window", "waits"):
            assert key in data["policies"][name]
        f = data["fidelity"][name]
        for key in ("wait_mean_real", "wait_mean_sim", "wait_rel_error", "bsld_real", "bsld_sim",
                    "start_spearman"):
            assert key in f and not math.isnan(f[key])
        assert f["start_spearman"] == pytest.approx(1.0)  # a shift keeps every rank
    assert data["fidelity"]["multifactor"]["wait_rel_error"] == pytest.approx(0.0, abs=1e-9)
    sjf = data["fidelity"]["daemon:sjf"]
    assert sjf["wait_mean_real"] == pytest.approx(sjf["wait_mean_sim"] + 600.0)
    assert "sign_agrees" in sjf and "placement" in data and "daemon:sjf" in data["placement"]
    assert data["config"]["speedup"] == SPEEDUP and data["config"]["scaled_slurm_conf"]
    # every job of daemon:sjf waited 600 s longer on "Slurm": the tail grew by that (24 jobs: no size
    # class has the 50 jobs a class needs to be judged on its own)
    harm = data["policies"]["daemon:sjf"]["no_harm"]
    assert not harm["ok"] and any(f.startswith("p99 wait") for f in harm["failures"])
    assert "no_harm" in data["simulated"]["daemon:sjf"]  # the simulated side is judged too
    paths = write_results(tmp_path, data, [res])
    assert json.loads((tmp_path / "results.json").read_text())["fidelity"]
    md = (tmp_path / "results.md").read_text()
    assert "Fidelity" in md and "No harm against multifactor" in md and "* daemon:sjf: harm: " in md
    assert {p.name for p in paths} >= {"results.json", "results.md", "wait_cdf.png", "busy_gpus.png"}
