"""Run every policy on every window, in parallel over processes, and aggregate.

Each worker loads the workload once (``_init``), so tasks carry only a policy name and a window
number. QSSF (and a model with the ``hist_time`` input) learns its history from the training split
first, as Helios does.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from tqdm import tqdm

from rltune_daemon import harm
from rltune_daemon.domain.arrays import JobTable
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.domain.workload import Workload
from rltune_daemon.evaluate.engines import Engine, deal, run_on_slurm
from rltune_daemon.evaluate.recorded import DAEMON_MULTIFACTOR
from rltune_daemon.evaluate.windows import heldout_windows
from rltune_daemon.harm import wait_by_class
from rltune_daemon.placement.context import FALLBACK_REASONS
from rltune_daemon.placement.milp import fallback_counts, reset_fallback_counts
from rltune_daemon.planner.config import (
    INTERVAL_DEFAULT,
    NEXT_IN_LINE_DEFAULT,
    REACT_DEFAULT,
    REORDER_DEFAULT,
    STARVATION_REFERENCE_DEFAULT,
    STARVATION_SECONDS_DEFAULT,
    STARVATION_STRETCH_DEFAULT,
    PlannerConfig,
    guard_reference,
    reorder_scope,
)
from rltune_daemon.policies import make_policy
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.learned import load_learned, model_identity
from rltune_daemon.policies.multifactor import Multifactor, leaves_slurm_order
from rltune_daemon.policies.registry import DAEMON_DEFAULT
from rltune_daemon.policies.slurm_priority import backfill_interval, read_config_file, site_multifactor
from rltune_daemon.sim.config import SimConfig
from rltune_daemon.sim.controller import Controller, PolicyController
from rltune_daemon.sim.daemon import planner_controller
from rltune_daemon.sim.engine import Simulator
from rltune_daemon.traces import load_workload
from rltune_daemon.traces.stats import estimates_note

# Generated traces whose default size is too small for ten held-out 1024-job windows.
EVAL_DEFAULT_OPTS: dict[str, dict[str, str]] = {"testbed": {"jobs": "20480"}}

SLURM_TASKS_DEFAULT = 32
REFERENCE = "multifactor"  # what Slurm does without the daemon: the yardstick for "did it hurt a job"
DEFAULT = "default"  # the policy spec of the daemon with no configuration
# the EvalConfig fields that are daemon settings (``default`` runs the daemon's own values of these)
DAEMON_SETTINGS = ("interval", "react", "starvation_seconds", "starvation_slots", "starvation_stretch",
                   "starvation_reference", "reorder", "next_in_line", "milp")
METRIC_KEYS = ("bsld", "wait_mean", "wait_median", "wait_p95", "wait_p99", "wait_max", "jct_mean",
               "utilization", "utilization_arrival", "makespan")


@dataclass(frozen=True)
class EvalConfig:
    trace: str
    policies: tuple[str, ...]
    windows: int = 10
    window_size: int = 1024
    seed: int = 0
    estimates: str | None = "user"
    mode: str = "daemon"
    cluster: str | None = None
    opts: dict[str, str] = field(default_factory=dict)
    jobs: int = 0  # worker processes; 0 = all cores
    pure: bool = False  # switch placement effects off
    interval: float = INTERVAL_DEFAULT  # daemon mode: seconds between re-plans (the daemon's `interval`)
    react: float = REACT_DEFAULT  # daemon mode: queue-check period, re-plan on change (0: off)
    starvation_seconds: float = STARVATION_SECONDS_DEFAULT  # daemon mode: the planner's guard (inf: off)
    starvation_slots: int = 0  # daemon mode: guarded jobs restored at once per tier (0: all)
    starvation_stretch: float = STARVATION_STRETCH_DEFAULT  # daemon mode: guard after stretch × time limit
    starvation_reference: str = STARVATION_REFERENCE_DEFAULT  # daemon mode: kept back below which position
    milp: bool = True  # learned policies place their top K with the MILP (False: Slurm's greedy default)
    split: str = "held-out"  # "train", "train-tail", "train-recent": training windows, for choosing;
    # "all": the whole trace
    bf_reservations: int = 1  # blocked jobs per partition the simulator's backfill reserves for (1: EASY)
    reorder: str = REORDER_DEFAULT  # daemon mode: what the policy may reorder (planner.config.Reorder)
    next_in_line: int = NEXT_IN_LINE_DEFAULT  # daemon mode, size-class: blocked jobs per partition kept
    slurm_config: str = ""  # a saved `scontrol show config`: multifactor (and the simulated Slurm under
    # every daemon-mode policy) ranks jobs by that cluster's own weights, not the default formula
    passes: str = "events"  # "events": a scheduling pass at every event; "slurm": as slurm_config's Slurm
    # (its main scheduler at events, backfill every bf_interval, a reservation for every job it tests)

    def trace_opts(self) -> dict[str, str]:
        return {**EVAL_DEFAULT_OPTS.get(self.trace, {}), **self.opts}

    def sim_config(self) -> SimConfig:
        effects = EffectsConfig.pure() if self.pure else EffectsConfig()
        if self.passes == "slurm" and self.slurm_config:
            period = backfill_interval(read_config_file(self.slurm_config))
            return SimConfig(effects=effects, bf_reservations=self.bf_reservations, pass_period=period,
                             main_at_events=True)
        return SimConfig(effects=effects, bf_reservations=self.bf_reservations)


def make_controller(spec: str, train: Workload, cfg: EvalConfig) -> Controller:
    """A controller for a policy spec, run as ``cfg`` says (mode, interval, guard, placer):

    * a baseline name (``sjf``): the heuristic ranks the queue at every scheduling pass;
    * ``rltune:<model dir>``: the learned policy through the daemon's planner (``cfg.mode``);
    * ``default``: what ``rltune-daemon`` runs with no configuration (``daemon:<DAEMON_DEFAULT>`` with
      the daemon's default cycle, guard and reorder, whatever ``cfg`` sets for the other policies);
    * ``daemon:<baseline>``: the heuristic through the daemon's planner, always in daemon mode: what
      ``rltune-daemon`` gives with ``base_policy = <baseline>`` and no model (``daemon:multifactor``
      writes no SiteFactor, as that daemon does: Slurm's own order plus placement hints).

    The MILP plans with the simulator's own placement effects (``pure`` switches both off)."""
    if spec == DEFAULT:  # the daemon's own defaults, whatever this evaluation's --config says
        defaults = EvalConfig(trace=cfg.trace, policies=cfg.policies)
        daemon_cfg = replace(cfg, **{k: getattr(defaults, k) for k in DAEMON_SETTINGS})
        return make_controller(f"daemon:{DAEMON_DEFAULT}", train, daemon_cfg)
    kind, _, name = spec.partition(":") if spec.startswith(("rltune:", "daemon:")) else ("", "", spec)
    base = site_multifactor(cfg.slurm_config)
    if kind == "rltune":
        learned = load_learned(name)
        if learned.learns_history:  # a model with the hist_time input: the same history as QSSF
            learned.fit_history(JobTable.from_jobs(train.jobs, train.cluster))
        return _planned(learned, cfg, cfg.mode, bool(learned.manifest.get("placement", True)), base=base)
    policy = base if name == REFERENCE and base is not None else make_policy(name)
    if policy.learns_history:
        policy.fit_history(JobTable.from_jobs(train.jobs, train.cluster))
    if kind != "daemon":
        return PolicyController(policy)
    return _planned(policy, cfg, "daemon", True, leave_order=leaves_slurm_order(policy.name), base=base)


def _planned(policy: Policy, cfg: EvalConfig, mode: str, placement: bool, leave_order: bool = False,
             base: Multifactor | None = None) -> Controller:
    placement = cfg.milp and placement
    planner = PlannerConfig(placement=placement, effects=cfg.sim_config().effects,
                            starvation_seconds=cfg.starvation_seconds,
                            starvation_slots=cfg.starvation_slots,
                            starvation_stretch=cfg.starvation_stretch,
                            starvation_reference=guard_reference(cfg.starvation_reference),
                            reorder=reorder_scope(cfg.reorder), next_in_line=cfg.next_in_line)
    return planner_controller(policy, mode, placement=placement, config=planner, interval=cfg.interval,
                              react=cfg.react, leave_order=leave_order, base=base)


_STATE: dict[str, Any] = {}


def _init(cfg: EvalConfig) -> None:
    import torch

    torch.set_num_threads(1)
    workload = load_workload(cfg.trace, estimates=cfg.estimates, seed=cfg.seed, cluster=cfg.cluster,
                             **cfg.trace_opts())
    train, windows = heldout_windows(workload, cfg.windows, cfg.window_size, cfg.seed, part=cfg.split)
    _STATE.update(cfg=cfg, workload=workload, train=train, windows=windows)


def _run(spec: str, k: int) -> dict[str, Any]:
    cfg: EvalConfig = _STATE["cfg"]
    window: Workload = _STATE["windows"][k]
    ctl = make_controller(spec, _STATE["train"], cfg)
    reset_fallback_counts()  # a worker runs one task at a time: the counts are this run's
    t0 = time.perf_counter()
    res = Simulator(window, ctl, cfg.sim_config()).run()
    job_waits = res.start - np.array([j.submit for j in window.jobs])  # NaN: never ran
    return {"policy": spec, "window": k, "metrics": res.metrics, "stats": res.stats,
            "seconds": time.perf_counter() - t0, "job_waits": job_waits.tolist(),
            "job_sizes": [j.gpus for j in window.jobs], "dropped": len(res.dropped),
            "milp_fallbacks": fallback_counts()}


def _run_chunk(cfg: EvalConfig, chunk: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """One task of a Slurm array (``engines.run_on_slurm``): load as a local worker does, run its share."""
    _init(cfg)
    return [_run(p, k) for p, k in chunk]


def evaluate(cfg: EvalConfig, progress: bool = True, engine: Engine | None = None) -> dict[str, Any]:
    """Results as ``{"policies": {name: metrics + per_window}, "config": {...}}``; the runs on this
    machine's cores, or on a Slurm array with ``engine`` (same numbers either way)."""
    tasks = [(p, k) for p in cfg.policies for k in range(cfg.windows)]
    workers = min(cfg.jobs or os.cpu_count() or 1, len(tasks))
    out: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    _init(cfg)  # in this process first: bad input fails here with its one-line error, not in a worker
    models = {spec: model_identity(spec.partition(":")[2]) for spec in cfg.policies
              if spec.startswith("rltune:")}  # read before the runs, so results name what was run
    bar = tqdm(total=len(tasks), desc=f"evaluate {cfg.trace}", unit="run", disable=not progress)
    if engine is not None and engine.kind == "slurm":
        # an array task per `jobs` (default: one per run, up to 32), each one CPU
        chunks = deal(tasks, cfg.jobs or min(len(tasks), SLURM_TASKS_DEFAULT))
        workers = len(chunks)
        out = run_on_slurm(engine, _run_chunk, cfg, chunks, bar.update)
    elif workers <= 1:
        for p, k in tasks:
            out.append(_run(p, k))
            bar.update()
    else:
        # spawn, not fork: forking a parent whose torch/OpenMP threads are running can crash the child
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, ctx, initializer=_init, initargs=(cfg,)) as pool:
            futures = [pool.submit(_run, p, k) for p, k in tasks]
            for fut in as_completed(futures):
                out.append(fut.result())
                bar.update()
    bar.close()
    where = "local" if engine is None or engine.kind == "local" else f"slurm:{engine.partition}".rstrip(":")
    return aggregate(cfg, out, time.perf_counter() - t0, workers, models, where, _STATE["workload"])


HURT_SECONDS = 600.0


def job_by_job(runs: list[dict[str, Any]], reference: list[dict[str, Any]]) -> dict[str, float]:
    """Each job's wait against its wait under ``reference`` on the same window: the share of jobs that
    waited more than ``HURT_SECONDS`` longer (hurt) or shorter (helped), and the worst extra wait. Means
    hide who pays for a gain; an admin asks exactly this."""
    ref = {r["window"]: np.asarray(r["job_waits"], dtype=float) for r in reference}
    diffs = [np.asarray(r["job_waits"], dtype=float) - ref[r["window"]] for r in runs if r["window"] in ref]
    d = np.concatenate(diffs) if diffs else np.zeros(0)
    d = d[~np.isnan(d)]
    if not len(d):
        return {"jobs": 0, "hurt_pct": 0.0, "helped_pct": 0.0, "worst_extra_wait": 0.0}
    return {"jobs": len(d), "hurt_pct": float(np.mean(d > HURT_SECONDS) * 100),
            "helped_pct": float(np.mean(d < -HURT_SECONDS) * 100),
            "worst_extra_wait": float(max(d.max(), 0.0))}


def wait_by_size(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean wait of the jobs of each size (GPUs, or processors on a CPU-only cluster) over all windows:
    whether a gain for small jobs is paid by the large ones that need the cluster to drain."""
    if not runs or not all("job_sizes" in r for r in runs):  # runs made by hand (tests) may carry none
        return {}
    waits = np.concatenate([np.asarray(r["job_waits"], dtype=float) for r in runs])
    sizes = np.concatenate([np.asarray(r["job_sizes"], dtype=np.int64) for r in runs])
    return wait_by_class(waits, sizes)


def no_harm(entry: dict[str, Any], reference: dict[str, Any], unit: str = "GPUs") -> dict[str, Any]:
    """The no-harm criterion (``harm.judge``) of one policy's entry against multifactor's, as JSON."""
    return harm.judge(harm.Figures.from_entry(entry), harm.Figures.from_entry(reference), unit).as_json()


def aggregate(cfg: EvalConfig, runs: list[dict[str, Any]], seconds: float, workers: int,
              models: dict[str, dict[str, Any]] | None = None, engine: str = "local",
              workload: Workload | None = None) -> dict[str, Any]:
    """Per-policy means over the windows and the ``config`` that says what ran: with ``workload`` (the
    trace as loaded) the requested-time model that ran and the jobs dropped at load, by reason."""
    policies: dict[str, Any] = {}
    for spec in cfg.policies:
        mine = sorted((r for r in runs if r["policy"] == spec), key=lambda r: r["window"])
        # means over windows, except the worst wait (the worst job of any window) and the p99 wait (of
        # every job of every window: the tail an admin sees over a month, not an average of tails)
        entry: dict[str, Any] = {
            key: float((np.max if key == "wait_max" else np.mean)([r["metrics"][key] for r in mine]))
            for key in METRIC_KEYS
        }
        entry["per_window"] = [{"window": r["window"], **{k: r["metrics"][k] for k in METRIC_KEYS}}
                               for r in mine]
        entry["waits"] = [w for r in mine for w in r["job_waits"] if not math.isnan(w)]  # jobs that ran
        entry["wait_p99"] = float(np.percentile(entry["waits"], 99)) if entry["waits"] else 0.0
        entry["wait_by_size"] = wait_by_size(mine)
        entry["sim_seconds"] = float(sum(r["seconds"] for r in mine))
        # counted: a fallback means some of this policy's decisions used the greedy placement
        entry["milp_fallbacks"] = {reason: sum(r.get("milp_fallbacks", {}).get(reason, 0) for r in mine)
                                   for reason in FALLBACK_REASONS}
        policies[spec] = entry
    reference = [r for r in runs if r["policy"] == REFERENCE]
    unit = "processors" if workload is not None and workload.cluster.resource == "cpu" else "GPUs"
    if reference:
        for spec in cfg.policies:
            if spec != REFERENCE:
                policies[spec]["vs_multifactor"] = job_by_job(
                    [r for r in runs if r["policy"] == spec], reference)
                policies[spec]["no_harm"] = no_harm(policies[spec], policies[REFERENCE], unit)
    config = asdict(cfg)
    config["opts"] = cfg.trace_opts()
    if cfg.starvation_seconds == float("inf"):
        config["starvation_seconds"] = "off"  # JSON has no infinity
    config.update(wall_seconds=seconds, workers=workers, engine=engine, daemon_multifactor=DAEMON_MULTIFACTOR,
                  estimates_used=cfg.estimates or "default", models=models or {})
    if workload is not None:
        # what the loader did, not what was asked: estimates=None lets the trace pick its model, and a
        # result over fewer jobs than the trace held must say how many went and why
        config.update(estimates_used=workload.estimates, estimates_note=estimates_note(workload),
                      jobs_loaded=len(workload.jobs), dropped_at_load=dict(workload.meta.get("dropped", {})),
                      resource=workload.cluster.resource)
    return {"policies": policies, "config": config}
