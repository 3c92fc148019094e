"""``rltune bench soak``: the daemon run long, watched from outside, for leaks and for what it costs users.

Two phases, each the real ``rltune-daemon`` process:

* **sim**: ``--backend sim`` at full speed for ``--sim-hours`` simulated hours (a shipped model deciding,
  a state file on disk). After every cycle the process's resident memory (``VmRSS``), open file
  descriptors and the state file's size are sampled; every cycle's log line is checked for errors.
* **live** (root and Slurm only): the project's local Slurm with every GPU busy and ``--live-jobs`` pending
  jobs, the daemon live for ``--live-cycles`` cycles, the same samples, plus a user's ``sbatch`` timed
  every 0.1 s before the daemon starts and during its cycles (the first one writes the most), then
  SIGTERM: how long the restore takes and whether every SiteFactor is back to 0.

Memory is "flat" when the resident size grows by less than ``FLAT_SHARE`` from the steady state (past
the first tenth of the cycles, and the state file within 5 % of its final size: a 10,000-job queue is
written ``max_updates_per_cycle`` jobs per cycle, so records, and memory with them, grow until all are
written) to the end. Writes ``DIR/soak.json`` and ``DIR/soak.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rltune_daemon.bench.load import NODE_GPUS, Latency, fill_queue, latency_stats
from rltune_daemon.bench.operator import OPERATOR_USER, RateLimitSettings, python_for, refusals
from rltune_daemon.cli.common import print_json
from rltune_daemon.errors import UserError
from rltune_daemon.service.statefile import StateFile
from rltune_daemon.slurm.localcluster import LocalCluster, slurm_installed

FLAT_SHARE = 0.05
SETTLE_S = 30.0
BASELINE_S = 60.0


@dataclass(kw_only=True)
class Sample:
    cycle: int
    wall_s: float
    rss_kb: int
    fds: int
    state_bytes: int
    cycle_s: float
    pending: int
    changed: int
    failed: int = 0  # updates the cycle's settle found failed or could not tell (unknown)


@dataclass
class Phase:
    name: str
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        s = self.samples
        if not s:
            return {"cycles": 0, "errors": self.errors, **self.extra}
        # steady state: past the first tenth of the cycles and with the state file near its final size
        # (on a big queue the first cycles keep adding records, and memory rightly grows with them)
        first = max(len(s) // 10, 1) - 1
        warm = next((x for x in s[first:] if x.state_bytes >= 0.95 * s[-1].state_bytes), s[-1])
        rss_growth = (s[-1].rss_kb - warm.rss_kb) / max(warm.rss_kb, 1)
        return {
            "cycles": len(s), "wall_s": round(self.wall_s, 1), "errors": len(self.errors),
            "first_errors": self.errors[:5], "steady_from_cycle": warm.cycle,
            "rss_kb": {"first": s[0].rss_kb, "after_warmup": warm.rss_kb, "last": s[-1].rss_kb,
                       "max": max(x.rss_kb for x in s)},
            "rss_growth_after_warmup": round(rss_growth, 4), "rss_flat": rss_growth < FLAT_SHARE,
            "fds": {"first": s[0].fds, "last": s[-1].fds, "max": max(x.fds for x in s)},
            "fds_flat": s[-1].fds <= warm.fds,
            "state_bytes": {"max": max(x.state_bytes for x in s), "last": s[-1].state_bytes},
            "cycle_s": {"first": round(s[0].cycle_s, 3),
                        "median": round(statistics.median(x.cycle_s for x in s), 3),
                        "max": round(max(x.cycle_s for x in s), 3)},
            **self.extra,
        }


def _proc(pid: int) -> tuple[int, int]:
    """Resident KB and open file descriptors of a process (0, 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            rss = next((int(ln.split()[1]) for ln in fh if ln.startswith("VmRSS:")), 0)
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError):
        return 0, 0


def _size(journal: Path) -> int:
    """The state journal's bytes, its write-ahead log's included (commits sit there until checkpointed)."""
    total = 0
    for path in (journal, journal.with_name(journal.name + "-wal")):
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return total


def _watch(proc: subprocess.Popen[str], phase: Phase, state: Path, stop_after: int,
           on_cycle: Callable[[int], None] | None = None) -> None:
    """Read the daemon's log lines; after each cycle take a sample; SIGTERM after ``stop_after`` cycles
    (0: let it end by itself)."""
    t0 = time.monotonic()
    termed = 0.0
    assert proc.stderr is not None
    for line in proc.stderr:
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("level") in ("error", "critical"):
            phase.errors.append(f"{event.get('event')}: {event.get('error', '')}"[:300])
        if event.get("event") != "cycle":
            if event.get("event") == "stopped":
                phase.extra["stopped"] = event
                phase.extra["stop_s"] = round(time.monotonic() - termed, 1) if termed else None
            continue
        if event.get("errors"):
            phase.errors.append(f"cycle {event['cycle']}: {event.get('error', '')}"[:300])
        rss, fds = _proc(proc.pid)
        phase.samples.append(Sample(cycle=int(event["cycle"]), wall_s=time.monotonic() - t0, rss_kb=rss,
                                    fds=fds, state_bytes=_size(state),
                                    cycle_s=float(event.get("seconds", 0.0)),
                                    pending=int(event.get("jobs_seen", 0)),
                                    changed=int(event.get("changed", 0)),
                                    failed=int(event.get("failed", 0)) + int(event.get("unknown", 0))))
        if on_cycle is not None:
            on_cycle(len(phase.samples))
        if stop_after and len(phase.samples) == stop_after:
            proc.send_signal(signal.SIGTERM)
            termed = time.monotonic()
    phase.wall_s = time.monotonic() - t0


def policy_env(model: str) -> dict[str, str]:
    """``--model`` as the daemon's environment: a model directory (run even where it trails its base
    policy: the soak measures what it writes) or ``daemon:NAME``, that base policy and no model."""
    if model.startswith("daemon:"):
        return {"RLTUNE_BASE_POLICY": model.removeprefix("daemon:")}
    return {"RLTUNE_MODEL": model, "RLTUNE_RUN_MODEL_BEHIND_BASE": "true"}


def _daemon(env: dict[str, str], *args: str, user: str | None = None) -> subprocess.Popen[str]:
    """The daemon process (as ``user``, directly: the signals the soak sends reach it, not a wrapper)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")} | env
    argv = [sys.executable, "-m", "rltune_daemon.cli.daemon", *args]
    who: dict[str, Any] = {}
    if user:
        pw = pwd.getpwnam(user)
        who = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
        full |= {"HOME": pw.pw_dir, "USER": user, "LOGNAME": user}
    return subprocess.Popen(argv, env=full, cwd="/tmp", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, bufsize=1, **who)


def soak_sim(hours: float, model: str, work: Path) -> Phase:
    phase = Phase("sim")
    state = work / "sim-state.db"
    proc = _daemon({"RLTUNE_SIM__SPEEDUP": "0", "RLTUNE_SIM__HOURS": str(hours), **policy_env(model),
                    "RLTUNE_STATE_FILE": str(state), "RLTUNE_METRICS__ENABLED": "false"},
                   "--backend", "sim")
    _watch(proc, phase, state, 0, _progress(f"sim: {hours:g} simulated hours", None))
    phase.extra["exit"] = proc.wait()
    phase.extra["sim_hours"] = hours
    return phase


def _progress(what: str, total: int | None) -> Callable[[int], None]:
    def show(n: int) -> None:
        if n % 50 == 0 or (total is not None and total <= 100):
            of = f"/{total}" if total else ""
            print(f"{what}: cycle {n}{of}", file=sys.stderr, flush=True)

    return show






def soak_live(jobs: int, cycles: int, model: str, interval: float, work: Path,
              operator: RateLimitSettings | None = None) -> Phase:
    """``operator``: the daemon runs as the non-root Operator ``OPERATOR_USER`` under ``rl_enable`` with
    these settings (slurmdbd started for the AdminLevel); refusals are counted from slurmctld's log.
    The timed ``sbatch`` stays root's, which the limit exempts: it measures slurmctld's answer time."""
    if os.geteuid() != 0 or not slurm_installed():
        raise UserError("the live soak needs root and Slurm (make setup); run it with --live-jobs 0 to skip")
    phase = Phase("live")
    user = OPERATOR_USER if operator else None
    overrides = {"SlurmctldParameters": operator.slurmctld_parameters()} if operator else {}
    cluster = LocalCluster.private(work / "slurm", message_timeout=10, test_user=user,
                                   with_dbd=operator is not None, conf_overrides=overrides)
    cluster.start()
    env = cluster.env()
    try:
        if user:
            subprocess.run(["sacctmgr", "-i", "modify", "user", user, "set", "AdminLevel=Operator"], env=env,
                           check=True, capture_output=True, cwd="/tmp")
            run_dir = work / "operator"
            run_dir.mkdir()
            shutil.chown(run_dir, user)
        else:
            run_dir = work
        for node, gres in NODE_GPUS.items():
            subprocess.run(["sbatch", "-o", "/dev/null", "-w", node, f"--gres=gpu:{gres}", "-t", "600",
                            "--wrap", "sleep 36000"], env=env, check=True, capture_output=True, cwd="/tmp")
        t0 = time.monotonic()
        fill_queue(jobs, env)
        phase.extra["submit_s"] = round(time.monotonic() - t0, 1)
        time.sleep(SETTLE_S)  # slurmctld's first scheduling passes over the new queue
        latency = Latency(env)
        stop = threading.Event()
        sampler = threading.Thread(target=latency.run, args=(stop,))
        sampler.start()
        time.sleep(BASELINE_S)  # the user's sbatch before the daemon runs, as long as a few cycles
        stop.set()
        sampler.join()
        baseline = [s for _, s in latency.times]
        before = list(latency.times)
        latency.times.clear()
        state = run_dir / "live-state.db"
        (work / "live.toml").write_text(
            f'interval = {interval}\nreact = 0\nstate_file = "{state}"\n'
            f'[slurm]\nconf = "{cluster.conf}"\n[metrics]\nenabled = false\n')
        stop = threading.Event()
        sampler = threading.Thread(target=latency.run, args=(stop,))
        started = time.monotonic()
        with contextlib.ExitStack() as stack:
            if user:
                stack.enter_context(python_for(user))
            proc = _daemon({"RLTUNE_CONFIG": str(work / "live.toml"), **policy_env(model)}, user=user)
            sampler.start()
            first_end: list[float] = []

            progress = _progress(f"live: {jobs} pending", cycles)

            def on_cycle(n: int) -> None:
                if n == 1:
                    first_end.append(time.monotonic())
                progress(n)

            try:
                _watch(proc, phase, state, cycles, on_cycle)
                phase.extra["exit"] = proc.wait(timeout=600)
            finally:
                stop.set()
                sampler.join()
                if proc.poll() is None:
                    proc.kill()
        if operator and user:
            log = cluster.state_dir / "log" / "slurmctld.log"
            phase.extra["rate_limit"] = {
                "slurmctld_parameters": operator.slurmctld_parameters(), "daemon_user": user,
                "refused_rpcs_daemon": refusals(log, pwd.getpwnam(user).pw_uid),
                "refused_rpcs_root": refusals(log, 0),
                "failed_updates": sum(x.failed for x in phase.samples)}
        end_first = first_end[0] if first_end else time.monotonic()
        during_first = [s for t, s in latency.times if started <= t <= end_first]
        # cycles as (start, end) since the daemon started: a user's sbatch while the daemon reads and
        # writes, against while it sleeps (slurmctld's own passes over a big queue show in both)
        spans = [(started + x.wall_s - x.cycle_s, started + x.wall_s) for x in phase.samples]
        last = spans[-1][1] if spans else started

        def inside(t: float) -> bool:
            return any(a <= t <= b for a, b in spans)
        stopped = phase.extra.get("stopped", {})
        subprocess.run(["scancel", "-n", "latency"], env=env, check=False, capture_output=True)
        site = subprocess.run(["sprio", "-h", "-o", "%S"], env=env, capture_output=True, text=True,
                              check=False, cwd="/tmp").stdout.split()
        phase.extra.update({
            "pending_jobs": jobs, "interval": interval, "model": model,
            "sbatch_before": latency_stats(baseline),
            "sbatch_during_first_cycle": latency_stats(during_first),
            "sbatch_during_all_cycles": latency_stats([s for _, s in latency.times]),
            "sbatch_inside_cycles": latency_stats([s for t, s in latency.times if inside(t)]),
            "sbatch_between_cycles": latency_stats([s for t, s in latency.times
                                                    if t <= last and not inside(t)]),
            "restore": {"restored_jobs": stopped.get("restored_jobs"),
                        "not_restored": stopped.get("not_restored"),
                        "seconds_from_sigterm": phase.extra.get("stop_s"),
                        "site_factors_left": sum(1 for v in site if v.strip() not in ("0", "")),
                        "state_jobs_left": _state_jobs(state)},
            "latency_samples": [(round(t - started, 3), round(s, 4)) for t, s in before + latency.times],
            "cycle_spans_s": [(round(a - started, 3), round(b - started, 3)) for a, b in spans],
            "first_cycle_end_s": round(end_first - started, 3),
        })
    finally:
        cluster.stop(purge=True)
    return phase


def _state_jobs(state: Path) -> int:
    with contextlib.closing(StateFile(state)) as reader:
        return len(reader.load().jobs)




def plot(result: dict[str, Any], phases: list[Phase], path: Path) -> None:
    """Memory and fds per cycle, state file size per cycle, each phase; a user's sbatch over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(16, 8))
    for phase, col in zip(phases, (0, 1), strict=False):
        s = phase.samples
        if not s:
            continue
        ax = axes[0][col]
        ax.plot([x.cycle for x in s], [x.rss_kb / 1024 for x in s], label="resident memory (MB)")
        ax.set_ylim(0, max(x.rss_kb for x in s) / 1024 * 1.15)
        ax.set_xlabel("cycle")
        ax.set_ylabel("resident memory (MB)")
        ax2 = ax.twinx()
        ax2.plot([x.cycle for x in s], [x.fds for x in s], color="tab:orange", label="open fds")
        ax2.set_ylabel("open file descriptors")
        ax2.set_ylim(0, max(x.fds for x in s) * 2)
        title = (f"sim: {phase.extra.get('sim_hours', '')} simulated h" if phase.name == "sim"
                 else f"live: {phase.extra.get('pending_jobs')} pending jobs")
        ax.set_title(f"{title}, {len(s)} cycles")
        ax.legend(loc="lower left")
        ax2.legend(loc="lower right")
        ax = axes[1][col]
        ax.plot([x.cycle for x in s], [x.state_bytes / 1024 for x in s])
        ax.set_xlabel("cycle")
        ax.set_ylabel("state file (KB)")
        ax.set_title(f"{phase.name}: state file size")
    live = next((p for p in phases if p.name == "live"), None)
    if live is not None and live.samples:
        ax = axes[0][2]
        ax.plot([x.cycle for x in live.samples], [x.cycle_s for x in live.samples], marker=".")
        ax.set_ylim(0, max(x.cycle_s for x in live.samples) * 1.2)
        ax.set_xlabel("cycle")
        ax.set_ylabel("seconds")
        ax.set_title("live: cycle time (read, plan, paced writes)")
    samples = result.get("live", {}).get("latency_samples") or []
    if samples:
        ax = axes[1][2]
        for a, b in result["live"].get("cycle_spans_s", []):
            ax.axvspan(a, b, color="tab:blue", alpha=0.12, linewidth=0)
        ax.plot([t for t, _ in samples], [1000 * v for _, v in samples], ".", color="tab:red", markersize=2)
        ax.axvline(0, color="black", linestyle="--", linewidth=1)
        ax.set_yscale("log")
        ax.set_xlabel("seconds since the daemon started (shaded: its cycles)")
        ax.set_ylabel("a user's sbatch (ms)")
        ax.set_title("live: sbatch before and while the daemon runs")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def bench_soak(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rltune-soak-"))
    work.chmod(0o755)  # munged (its own user) keeps the local cluster's socket and log below it
    phases: list[Phase] = []
    result: dict[str, Any] = {"command": " ".join(["rltune", *sys.argv[1:]]), "model": args.model}
    if args.sim_hours > 0:
        phases.append(soak_sim(args.sim_hours, args.model, work))
        result["sim"] = phases[-1].summary()
    if args.live_jobs > 0:
        operator = RateLimitSettings(args.rl_bucket, args.rl_refill) if args.operator else None
        phases.append(soak_live(args.live_jobs, args.live_cycles, args.model, args.interval, work, operator))
        result["live"] = phases[-1].summary()
    result["samples"] = {p.name: [asdict(s) for s in p.samples] for p in phases}
    (out / "soak.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    plot(result, phases, out / "soak.png")
    short = {k: v for k, v in result.items() if k != "samples"}
    for phase in short.values():
        if isinstance(phase, dict):
            phase.pop("latency_samples", None)
            phase.pop("cycle_spans_s", None)
    print_json(short)
    ok = all(result[p.name].get("rss_flat") and result[p.name].get("fds_flat")
             and not result[p.name]["errors"] for p in phases)
    return 0 if ok else 1


def register(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = bsub.add_parser("soak", help="run the daemon long (simulated day, then a 10,000-job live queue) and "
                                      "watch memory, file descriptors, state file and users' sbatch")
    s.add_argument("--sim-hours", type=float, default=24.0, help="simulated hours of --backend sim (0: skip)")
    s.add_argument("--live-jobs", type=int, default=10_000, help="pending jobs on the local Slurm (0: skip)")
    s.add_argument("--live-cycles", type=int, default=20, help="live cycles before SIGTERM")
    s.add_argument("--interval", type=float, default=10.0, help="the live daemon's interval (seconds)")
    s.add_argument("--model", default="models/testbed-multifactor",
                   help="model directory the daemon runs, or daemon:NAME for a base policy and no model")
    s.add_argument("--operator", action="store_true",
                   help="live: the daemon as a non-root Slurm Operator under rl_enable (enforced from "
                        "Slurm 23.02); refused RPCs counted from slurmctld's log")
    s.add_argument("--rl-bucket", type=int, default=30, help="with --operator: rl_bucket_size (Slurm's 30)")
    s.add_argument("--rl-refill", type=int, default=2, help="with --operator: rl_refill_rate/s (Slurm's 2)")
    s.add_argument("--out", default="runs/soak", help="directory for soak.json and soak.png")
    s.set_defaults(func=bench_soak)
