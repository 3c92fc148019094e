"""The window a replay runs, drawn as ``rltune evaluate`` draws its held-out windows (seed ``s``: the
trace generated with seed ``s`` and its first window of seed ``s``), with trace-relative submit times
and every limit replaced by the one the real cluster will enforce (``scaling.replay_limit``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.evaluate.runner import EvalConfig
from rltune_daemon.evaluate.windows import heldout_windows
from rltune_daemon.replay.scaling import replay_limit
from rltune_daemon.traces import load_workload


@dataclass(frozen=True)
class ReplayWindow:
    """``window``: the jobs both sides run (submit from 0, replay limits); ``train``: the history that
    history-reading policies learn from, as in ``rltune evaluate``; ``start``: the window's first
    submit in the trace."""

    seed: int
    window: Workload
    train: Workload
    start: float


def replay_window(cfg: EvalConfig, speedup: float, cluster: ClusterSpec | None = None,
                  partition: str = "") -> ReplayWindow:
    """``cfg.seed``'s window of ``cfg.window_size`` jobs (``cfg.split`` part of ``cfg.trace``); on an
    existing cluster (``cluster``) every job goes to ``partition``, the one the admin named."""
    workload = load_workload(cfg.trace, estimates=cfg.estimates, seed=cfg.seed,
                             cluster=cluster if cluster is not None else cfg.cluster, **cfg.trace_opts())
    train, windows = heldout_windows(workload, 1, cfg.window_size, cfg.seed, part=cfg.split)
    win = windows[0]
    t0 = win.jobs[0].submit
    jobs = tuple(replace(j, submit=j.submit - t0, time_limit=replay_limit(j.time_limit, speedup),
                         partition=partition or j.partition) for j in win.jobs)
    return ReplayWindow(cfg.seed, win.with_jobs(jobs, replay_speedup=speedup), train, t0)
