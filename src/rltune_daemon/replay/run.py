"""One replay: every seed's window, every arm on a fresh cluster, then the simulator on the same
window, then results (``report``). Cleanup is in ``finally`` blocks: the replay's own jobs are
cancelled by id, the daemon gets SIGTERM (its restore path) and the private cluster is stopped and
deleted, whatever ended the run (Ctrl-C included)."""

from __future__ import annotations

import json
import os
import pwd
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.runner import EvalConfig
from rltune_daemon.policies.multifactor import MultifactorWeights
from rltune_daemon.policies.slurm_priority import backfill_interval, cluster_weights
from rltune_daemon.replay import cluster as clusters
from rltune_daemon.replay.arms import Arm, parse_arms
from rltune_daemon.replay.collect import Collector, JobTimes, ctld_hints
from rltune_daemon.replay.daemon_arm import trace_cycle
from rltune_daemon.replay.report import build_results, write_results
from rltune_daemon.replay.scaling import JobRequest, checked_speedup, job_request
from rltune_daemon.replay.simulate import simulate
from rltune_daemon.replay.submit import Submitted, Submitter, cancel
from rltune_daemon.replay.window import ReplayWindow, replay_window
from rltune_daemon.signals import sigterm_interrupts
from rltune_daemon.sim.engine import SimResult

DEFAULT_SPEEDUP = 120.0
LEAD_S = 2.0  # wall seconds between the last preparation and the first submission
DAEMON_READY_S = 180.0  # the daemon imports torch and loads its model before its first cycle
DAEMON_STOP_S = 60.0  # SIGTERM -> restore -> exit


@dataclass(frozen=True)
class ReplayConfig:
    arms: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    trace: str = "testbed"
    window_size: int = 256
    speedup: float = DEFAULT_SPEEDUP
    cluster: str = "local"  # "local": the private test cluster; "existing": the admin's
    partition: str = ""
    slurm_conf: str = ""
    accounting: bool = True
    estimates: str = "user"
    opts: dict[str, str] = field(default_factory=dict)
    split: str = "held-out"
    parallel: int = 1
    poll: float = 0.5
    out: str = "runs/replay"
    passes: str = "grid"  # the simulator's scheduling passes (``simulate.sim_config``; docs/fidelity.md)
    state_root: str = ""  # where private clusters keep their state (default /tmp)

    def eval_config(self, seed: int) -> EvalConfig:
        return EvalConfig(trace=self.trace, policies=self.arms, windows=1, window_size=self.window_size,
                          seed=seed, estimates=self.estimates, opts=dict(self.opts), split=self.split,
                          pure=True)


@dataclass(kw_only=True)
class ArmRun:
    """What one arm did on the real cluster (times are Slurm's, epoch seconds)."""

    arm: str
    seed: int
    t0: float
    submitted: list[Submitted]
    times: dict[str, JobTimes]
    wall_seconds: float
    weights: MultifactorWeights
    notes: list[str]
    daemon_rc: int | None = None
    daemon_log: str = ""
    polls: int = 0
    left_in_queue: int = 0  # of the replay's own jobs, still pending or running after cleanup
    pass_period: float = 0.0  # the cluster's bf_interval in trace seconds (the simulator's pass grid)
    daemon_counts: dict[str, int] = field(default_factory=dict)  # summed from its cycle log lines


@dataclass
class SeedResult:
    seed: int
    window: ReplayWindow
    real: dict[str, ArmRun] = field(default_factory=dict)
    sim: dict[str, SimResult] = field(default_factory=dict)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def submission_plan(win: ReplayWindow, speedup: float, partition: str, cluster: ClusterSpec
                    ) -> list[tuple[str, float, JobRequest]]:
    """(trace id, wall seconds after t0, request) for every job, in trace order. Names carry the seed
    and trace id only, so the same seed submits the same sequence."""
    per_node = max(n.gpus for n in cluster.nodes)
    return [(j.id, j.submit / speedup,
             job_request(j, f"rltr-s{win.seed}-{j.id}", partition, speedup, per_node))
            for j in win.window.jobs]


COUNTED = ("priority_updates", "hints_set", "hints_cleared", "hints_expired", "failed", "refused")


def daemon_counts(log: Path) -> dict[str, int]:
    """The daemon's own tally of its writes, summed over its ``cycle`` log lines (JSON)."""
    out = dict.fromkeys(("cycles", *COUNTED), 0)
    if not log.exists():
        return out
    for line in log.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("event") == "cycle":
            out["cycles"] += 1
            for key in COUNTED:
                value = rec.get(key, 0)
                out[key] += int(value) if isinstance(value, int) else 0
    return out


def _ceiling(win: ReplayWindow, speedup: float) -> float:
    """Generous wall-clock bound on one arm: every job's limit one after another after the last
    submit can never be exceeded, since Slurm kills a job at its limit."""
    jobs = win.window.jobs
    return (jobs[-1].submit + sum(j.time_limit for j in jobs)) / speedup + 600.0


def _wait_ready(proc: subprocess.Popen[bytes], log: Path, stop: threading.Event) -> None:
    deadline = time.monotonic() + DAEMON_READY_S
    while time.monotonic() < deadline and not stop.is_set():
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
            raise UserError(f"the replay's daemon exited (rc {proc.returncode}) before its first cycle: "
                            f"{' | '.join(tail)}")
        if log.exists() and '"cycle"' in log.read_text(errors="replace"):
            return
        time.sleep(0.2)
    if not stop.is_set():
        raise UserError(f"the replay's daemon did not finish a cycle within {DAEMON_READY_S:g} s ({log})")


def _stop_daemon(proc: subprocess.Popen[bytes]) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(DAEMON_STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


def run_arm(cfg: ReplayConfig, arm: Arm, win: ReplayWindow, target: clusters.Target, out: Path,
            stop: threading.Event, progress: Callable[[int], None]) -> ArmRun:
    """Submit the window to ``target`` in compressed time and collect Slurm's times until every job
    the replay submitted has ended."""
    config_text = target.config_text()
    weights, notes = cluster_weights(config_text, cfg.speedup)
    pass_period = backfill_interval(config_text) * cfg.speedup
    plan = submission_plan(win, cfg.speedup, target.partition, win.window.cluster)
    collector = Collector(target.env)
    mine = threading.Event()  # this arm's submissions only: a failing seed must not stop the others
    submitter = Submitter(plan=plan, env=target.env, stop=mine)
    daemon: subprocess.Popen[bytes] | None = None
    log = out / "daemon" / f"seed{win.seed}-{slug(arm.spec)}.log"
    began = time.monotonic()
    rc: int | None = None
    thread: threading.Thread | None = None
    try:
        origin = time.time() + LEAD_S
        if arm.uses_daemon:
            log.parent.mkdir(parents=True, exist_ok=True)
            settings = {"speedup": cfg.speedup, "origin": origin, "conf": target.conf,
                        "base_policy": arm.policy if arm.kind == "daemon" else "multifactor",
                        "model": arm.policy if arm.kind == "rltune" else "", "placement": arm.hints,
                        "reorder": arm.reorder,
                        "state_file": str(log.with_suffix(".state.db"))}
            if target.local is None:  # a shared cluster: steer only this user's jobs in this partition
                settings.update(scope_user=pwd.getpwuid(os.getuid()).pw_name, partition=target.partition)
            path = log.with_suffix(".settings.json")
            path.write_text(json.dumps(settings, indent=2))
            with open(log, "wb") as fh:
                # own session: a Ctrl-C at the terminal reaches the replay, which then stops the daemon
                # with SIGTERM (its restore path) instead of both racing on SIGINT
                argv = [sys.executable, "-m", "rltune_daemon.replay.daemon_arm", str(path)]
                daemon = subprocess.Popen(argv, env={**os.environ, **target.env}, stdout=fh, stderr=fh,
                                          start_new_session=True)
            _wait_ready(daemon, log, stop)
        # the daemon maps Slurm's clock around ``origin``, an offset only: the waits and durations it
        # sees do not depend on it, so submission may start later than ``origin`` (after its first cycle)
        submitter.t0 = max(origin, time.time() + LEAD_S)
        thread = submitter.start()
        deadline = time.monotonic() + _ceiling(win, cfg.speedup)
        done_before = 0
        while not stop.is_set():
            if submitter.error:
                raise UserError(submitter.error)
            ids = submitter.ids()
            collector.poll(ids)
            finished = len(ids) - len(collector.queued(ids))
            if finished > done_before:
                progress(finished - done_before)
                done_before = finished
            if submitter.done.is_set() and len(ids) == len(plan) and finished == len(ids):
                break
            if daemon is not None and daemon.poll() is not None:
                raise UserError(f"the replay's daemon exited early (rc {daemon.returncode}; log {log})")
            if time.monotonic() > deadline:
                raise UserError(f"arm {arm.spec} (seed {win.seed}) not finished after "
                                f"{_ceiling(win, cfg.speedup):.0f} s: Slurm stopped starting jobs?")
            time.sleep(cfg.poll)
        if stop.is_set():
            raise KeyboardInterrupt
    finally:
        mine.set()
        if thread is not None:
            thread.join(90.0)  # an sbatch in flight returns its id before anything is cancelled
        if daemon is not None:
            rc = _stop_daemon(daemon)
        # only ids this replay submitted (jobs of anyone else are never named), unless seen finished
        cancel(target.env, [i for i in submitter.ids()
                            if i not in collector.jobs or not collector.jobs[i].finished])
    counts = daemon_counts(log) if daemon is not None else {}
    if target.state_dir is not None and target.local is not None:
        counts["exc_updates_in_slurmctld_log"] = ctld_hints(
            target.local.state_dir / "log" / "slurmctld.log", collector.jobs)
    ids = submitter.ids()
    collector.poll(ids)  # after cleanup: what Slurm still holds of ours (a finished arm: nothing)
    if daemon is not None and rc not in (0, None):
        notes.append(f"daemon exit status {rc} (see {log})")
    return ArmRun(arm=arm.spec, seed=win.seed, t0=submitter.t0, submitted=list(submitter.submitted),
                  times=dict(collector.jobs), wall_seconds=time.monotonic() - began, weights=weights,
                  notes=notes, daemon_rc=rc, daemon_log=str(log) if daemon is not None else "",
                  polls=collector.polls, left_in_queue=len(collector.queued(ids)), pass_period=pass_period,
                  daemon_counts=counts)


def run_seed(cfg: ReplayConfig, arms: tuple[Arm, ...], seed: int, out: Path, stop: threading.Event,
             progress: Callable[[int], None], trace_cluster: ClusterSpec | None,
             existing: clusters.Target | None) -> SeedResult:
    win = replay_window(cfg.eval_config(seed), cfg.speedup, trace_cluster,
                        existing.partition if existing is not None else "")
    res = SeedResult(seed, win)
    for arm in arms:
        if stop.is_set():
            raise KeyboardInterrupt
        target = existing or clusters.start_local(cfg.speedup, cfg.accounting,
                                                  Path(cfg.state_root) if cfg.state_root else None)
        try:
            res.real[arm.spec] = run_arm(cfg, arm, win, target, out, stop, progress)
        finally:
            if existing is None:
                target.stop()
        run = res.real[arm.spec]
        res.sim[arm.spec] = simulate(arm, win, run.weights, cfg.trace, run.pass_period,
                                     trace_cycle(cfg.speedup), cfg.passes)
    return res


def run_replay(cfg: ReplayConfig, progress_bar: bool = True) -> dict[str, Any]:
    """Run ``cfg`` and write its results under ``cfg.out``; returns results.json's content."""
    checked_speedup(cfg.speedup)
    arms = parse_arms(",".join(cfg.arms))
    for arm in arms:  # a missing model fails here, not after a cluster has started
        if arm.kind == "rltune" and not Path(arm.policy).is_dir():
            raise UserError(f"arm {arm.spec}: no model directory {arm.policy}")
    if cfg.window_size < 2:
        raise UserError(f"--window-size {cfg.window_size}: a replay needs at least 2 jobs")
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    existing: clusters.Target | None = None
    trace_cluster: ClusterSpec | None = None
    if cfg.cluster == "existing":
        if not cfg.partition:
            raise UserError("--cluster existing needs --partition P (the partition the replay may use)")
        existing = clusters.existing(cfg.partition, cfg.slurm_conf)
        trace_cluster = clusters.existing_trace_cluster(existing)
    elif cfg.cluster != "local":
        raise UserError(f"--cluster {cfg.cluster!r}: choose local or existing")
    for seed in cfg.seeds:  # bad windows fail before any cluster starts
        replay_window(cfg.eval_config(seed), cfg.speedup, trace_cluster, cfg.partition)
    total = cfg.window_size * len(arms) * len(cfg.seeds)
    bar = tqdm(total=total, desc="replay", unit="job", disable=not progress_bar)
    lock = threading.Lock()

    def progress(n: int) -> None:
        with lock:
            bar.update(n)

    stop = threading.Event()
    t0 = time.monotonic()
    results: list[SeedResult] = []
    # seeds run one after another unless --parallel: each its own private cluster
    workers = 1 if existing is not None else max(1, min(cfg.parallel, len(cfg.seeds)))
    with sigterm_interrupts():
        try:
            if workers == 1:
                for seed in cfg.seeds:
                    results.append(run_seed(cfg, arms, seed, out, stop, progress, trace_cluster, existing))
            else:
                with ThreadPoolExecutor(workers) as pool:
                    futures = [pool.submit(run_seed, cfg, arms, s, out, stop, progress, trace_cluster,
                                           existing) for s in cfg.seeds]
                    try:
                        while not all(f.done() for f in futures):
                            time.sleep(0.2)
                            for f in futures:
                                if f.done() and f.exception() is not None:
                                    stop.set()
                    except BaseException:
                        stop.set()
                        raise
                    results = [f.result() for f in futures]
        except BaseException:
            stop.set()
            raise
        finally:
            bar.close()
    wall = time.monotonic() - t0
    data = build_results(cfg, arms, results, wall)
    write_results(out, data, results)
    return data


def resimulate(source: Path, out: Path, passes: str = "grid") -> dict[str, Any]:
    """Score the real runs recorded in ``source``/results.json against the simulator as it is now
    (with the scheduling passes ``passes``): the real side is not run again. How a simulator change is
    judged on the same real schedules."""
    old = json.loads((source / "results.json").read_text())
    c = old["config"]
    cfg = ReplayConfig(arms=tuple(c["arms"]), seeds=tuple(c["seeds"]), trace=c["trace"],
                       window_size=c["window_size"], speedup=c["speedup"], cluster=c["cluster"],
                       partition=c.get("partition", ""), accounting=c["accounting"], estimates=c["estimates"],
                       opts=c["opts"], split=c["split"], out=str(out), passes=passes)
    arms = parse_arms(",".join(cfg.arms))
    weights = MultifactorWeights(**c["cluster_priority"])
    period = c.get("bf_interval", 1.0) * cfg.speedup
    results: list[SeedResult] = []
    t0 = 1_000_000_000.0
    for seed in cfg.seeds:
        win = replay_window(cfg.eval_config(seed), cfg.speedup)
        res = SeedResult(seed, win)
        for arm in arms:
            rows = old["per_job"][arm.spec][str(seed)]
            subs, times = [], {}
            for r in rows:
                sub, start, end = (None if r[k] is None else t0 + r[k] / cfg.speedup
                                   for k in ("submit", "start", "end"))
                t = JobTimes(r["job_id"], state="COMPLETED", submit=sub, start=start, end=end,
                             nodes=r["nodes"], excluded=r["excluded"], ever_excluded=bool(r["excluded"]))
                times[r["job_id"]] = t
                subs.append(Submitted(r["trace_id"], r["job_id"], t0, ()))
            meta = next(x for x in old["runs"] if x["arm"] == arm.spec and x["seed"] == seed)
            res.real[arm.spec] = ArmRun(arm=arm.spec, seed=seed, t0=t0, submitted=subs, times=times,
                                        wall_seconds=meta["wall_seconds"], weights=weights,
                                        notes=list(meta.get("notes", [])), daemon_rc=meta.get("daemon_rc"),
                                        daemon_log="", polls=meta.get("polls", 0),
                                        left_in_queue=meta.get("left_in_queue", 0), pass_period=period,
                                        daemon_counts=meta.get("daemon_counts", {}))
            res.sim[arm.spec] = simulate(arm, win, weights, cfg.trace, period, trace_cycle(cfg.speedup),
                                         passes)
        results.append(res)
    data = build_results(cfg, arms, results, float(c["wall_seconds"]))
    data["config"]["resimulated_from"] = str(source)
    for new, prev in zip(data["runs"], old["runs"], strict=True):
        new["submission_sequence"] = prev.get("submission_sequence", [])
    write_results(out, data, results)
    return data
