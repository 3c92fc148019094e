"""``rltune-daemon``: tune Slurm job priorities (SiteFactor) and placement every ``interval`` seconds,
and within ``react`` seconds of a job arriving, starting or ending.

Start with ``--dry-run`` (prints what would change, writes nothing), then run it under systemd.
``--restore`` puts every job the daemon changed back to how it was. Bad input is one line on
stderr and exit status 2, never a traceback and never a write to Slurm.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rltune_daemon import __version__
from rltune_daemon.domain import job_order
from rltune_daemon.errors import UserError, run_guarded
from rltune_daemon.policies.learned import LearnedPolicy
from rltune_daemon.service.backends import Backend, SlurmBackend
from rltune_daemon.service.config import DaemonConfig, default_config_path, load_config
from rltune_daemon.service.logging import configure, get_logger
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.notify import Notifier
from rltune_daemon.service.policy import CountingPlacer, choose_policy, trained_under
from rltune_daemon.service.probe import print_probe, run_probe
from rltune_daemon.service.statefile import StateFile, legacy_path
from rltune_daemon.sim.backend import SimBackend
from rltune_daemon.slurm.errors import SlurmError
from rltune_daemon.traces import load_workload


def make_backend(cfg: DaemonConfig, once: bool = False) -> Backend:
    """The configured backend. ``once``: it serves a single cycle (``--once``; see ``SimBackend``)."""
    return sim_backend(cfg, once) if cfg.backend == "sim" else SlurmBackend(cfg)


def sim_backend(cfg: DaemonConfig, once: bool = False, kind: type[SimBackend] = SimBackend) -> SimBackend:
    """``[sim]``'s workload on a simulated Slurm whose clock checks the queue at the daemon's ``react``
    period (else every ``interval``)."""
    s = cfg.sim
    workload = load_workload(s.workload, seed=s.seed)
    if s.jobs:
        workload = workload.with_jobs(workload.jobs[: s.jobs], jobs_limit=s.jobs)
    tick = cfg.react if 0 < cfg.react < cfg.interval else cfg.interval
    return kind(workload, tick=tick, speedup=s.speedup, hours=s.hours, once=once)

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rltune-daemon",
        description="Learned priority and placement tuning for Slurm GPU clusters (SiteFactor + node hints).",
        epilog="Environment overrides: RLTUNE_<KEY>, nested RLTUNE_<SECTION>__<KEY> "
               "(e.g. RLTUNE_PLANNER__TOP_K=8). Docs: docs/operations.md",
    )
    p.add_argument("--config", metavar="PATH",
                   help="TOML config (default: $RLTUNE_CONFIG, else /etc/rltune-daemon/rltune-daemon.toml "
                        "if it exists, else built-in defaults)")
    p.add_argument("--dry-run", action="store_true",
                   help="plan and print the table of proposed changes; write nothing to Slurm")
    p.add_argument("--once", action="store_true",
                   help="run one cycle and exit (changes stay; undo with --restore); exit 1 if skipped")
    p.add_argument("--backend", choices=("slurm", "sim"),
                   help="slurm (default) or sim: the same loop against the simulator on a bundled trace")
    p.add_argument("--restore", action="store_true",
                   help="put every SiteFactor/node list the daemon changed back to its original and exit")
    p.add_argument("--check-config", action="store_true", help="validate and print the effective config")
    p.add_argument("--probe", action="store_true",
                   help="with --check-config: also run, read-only, every Slurm command a cycle runs (and "
                        "say whether this user may write); exit 1 when one fails")
    p.add_argument("--version", action="version", version=f"rltune-daemon {__version__}")
    return p


def order_text(cfg: DaemonConfig, leave_order: bool) -> str:
    """One line on what the daemon may move, for ``--check-config``."""
    if leave_order:
        return "Slurm's own (multifactor: no SiteFactor written; placement hints only)"
    p = cfg.planner
    if p.reorder == "queue":
        scope = "every job may move past any other of its tier"
    else:
        scope = ("only within each job-size class (per tier and partition), every class in the places "
                 f"Slurm's own order gives it; the first {p.next_in_line} blocked jobs of each partition "
                 "keep their places")
    place = {"priority": "multifactor", "submit": "submit-order", "both": "multifactor or submit-order"}
    return (f"{scope}; a job kept behind its {place[p.starvation_reference]} place goes back to it after "
            f"max({p.starvation_seconds / 3600:g} h, {p.starvation_stretch:g} x its time limit)")


def recommendation(path: str) -> str:
    """Where the configuration's choice came from: the ``rltune site`` run's date, history, self-check
    and verdict, as its results.json says; or why that file cannot say."""
    try:
        res = json.loads(Path(path).read_text())
        fid, hist, verdict = res["fidelity"], res["history"], res["verdict"]
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(Path(path).stat().st_mtime))
        return (f"{path} ({when}): {hist['jobs']} jobs over {hist['days']:.1f} days of {res['source']}, "
                f"self-check wait error {fid['wait_rel_error']:+.1%}, Spearman {fid['start_spearman']:.3f}; "
                f"{verdict['line']}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{path} (unreadable: {exc}; run `rltune site` again)"


def check_config(cfg: DaemonConfig, path: Path | None, probe: bool = False) -> int:
    """Print the effective configuration and what it resolves to (policy, placer, state file); with
    ``probe``, run the read side of a cycle against the configured Slurm (``service.probe``)."""
    print(f"# config: {path if path is not None else 'built-in defaults'} + RLTUNE_* environment")
    print(json.dumps(cfg.effective(), indent=2, sort_keys=True))
    choice = choose_policy(cfg.model, cfg.base_policy, cfg.run_model_behind_base)
    if choice.fallback:
        print(f"policy: FALLBACK to {choice.policy.name}: {choice.fallback}")
    else:
        print(f"policy: {choice.described}")
        if isinstance(choice.policy, LearnedPolicy) and (formula := choice.policy.formula()):
            print(f"formula: {formula}")
        if choice.behind_base:  # run_model_behind_base = true: the admin chose to run it anyway
            print(f"warning: {choice.behind_base}")
        if note := trained_under(choice.identity, cfg.loop_settings()):
            print(f"note: {note}")
    print(f"order: {order_text(cfg, choice.leave_order)}")
    if cfg.recommended_by:
        print(f"recommended by: {recommendation(cfg.recommended_by)}")
    if choice.policy.learns_history:
        print(f"history: {choice.label} learns finished runs from sacct (last "
              f"{cfg.slurm.history_days:g} days, needs slurmdbd; --dry-run shows what it got)")
    placer = CountingPlacer(cfg.planner.placer, cfg.planner.milp_time_limit)
    print(f"placer: {placer.unavailable or cfg.planner.placer}")
    state = cfg.resolved_state_file()
    parent = state.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    writable = os.access(parent, os.W_OK)
    print(f"state file: {state} ({'writable' if writable else 'NOT writable by this user'})")
    if (legacy := legacy_path(state)) is not None and legacy.exists():
        print(f"state file: {legacy}, an earlier version's, is migrated into it at the next live start")
    print("config OK")
    if cfg.backend != "slurm":
        if probe:
            print("probe: nothing to probe with backend = sim")
        return 0
    if not probe:  # which Slurm, and what that decides: one read-only RPC, the rest is for --probe
        try:
            release = SlurmBackend(cfg).detect()
        except SlurmError as err:
            print(f"slurm: not read ({err}); --check-config --probe on a host that reaches slurmctld")
        else:
            for line in release.implications():
                print(f"slurm: {line}")
        return 0
    return print_probe(run_probe(cfg, history=choice.policy.learns_history))


def _run(args: argparse.Namespace) -> int:
    path = Path(args.config) if args.config else default_config_path()
    cfg = load_config(path, dry_run=True if args.dry_run else None, backend=args.backend)
    if args.probe and not args.check_config:
        raise UserError("--probe goes with --check-config (rltune-daemon --check-config --probe)")
    if args.check_config:
        return check_config(cfg, path, probe=args.probe)
    configure(cfg.log.level, cfg.log.format)
    log = get_logger()
    in_memory = cfg.backend == "sim" and not cfg.state_file
    state_file = StateFile(None if in_memory else cfg.resolved_state_file())
    live = not cfg.dry_run
    if live or args.restore:
        state_file.check_writable()
        state_file.lock()
    try:
        if live and (kept := state_file.migrate()) is not None:
            log.info("state_migrated", into=str(state_file.path), kept=str(kept))
        backend = make_backend(cfg, once=args.once and not args.restore)
        metrics = Metrics()
        server = None
        if cfg.metrics.enabled and not args.once and not args.restore:
            server = metrics.serve(cfg.metrics.bind, cfg.metrics.port)
        notifier = Notifier()
        daemon = Daemon(cfg, backend, state_file=state_file, log=log, metrics=metrics, notifier=notifier,
                        table=args.once or sys.stdout.isatty())
        if isinstance(backend, SlurmBackend):
            try:
                release = backend.detect()
            except SlurmError as err:
                log.warning("slurm_release_unknown", error=str(err),
                            effect="Slurm's version and RPC rate limit (rl_enable) not read; "
                                   "writes paced by write_rate")
            else:
                log.info("slurm_release", version=release.series, implies=release.implications())
                if release.rate_limit.applies:
                    log.info("rate_limit", slurm=release.rate_limit.describe())
        if args.restore:
            return _restore(daemon)
        log.info("starting", version=__version__, config=str(path) if path else "", backend=cfg.backend,
                 dry_run=cfg.dry_run, interval=cfg.interval, react=cfg.react, policy=daemon.choice.label,
                 fallback=daemon.choice.fallback, state_file=str(state_file.path or "(memory)"),
                 metrics=f"{cfg.metrics.bind}:{server.port}" if server else "off",
                 watchdog=notifier.watchdog_interval)
        try:
            return daemon.run(once=args.once)
        finally:
            if server is not None:
                server.close()
    finally:
        state_file.close()  # under the lock: SQLite folds its log into the journal
        state_file.unlock()


def _restore(daemon: Daemon) -> int:
    if not daemon.state.jobs:
        print(f"nothing to restore: {daemon.state_file.path or 'state'} records no changed job")
        return 0
    if daemon.dry_run:
        print(f"would restore {len(daemon.state.jobs)} job(s): {', '.join(sorted(daemon.state.jobs))}")
        return 0
    rep = daemon.restore()
    print(f"restored {rep.restored_fields} field(s) on {rep.restored_jobs} job(s); "
          f"{rep.dropped} job(s) had ended (nothing to undo)")
    for job_id, why in sorted(rep.kept.items()):
        print(f"kept: job {job_id}: {why}")
    for job_id, why in sorted(rep.remaining.items()):
        print(f"NOT restored: job {job_id}: {why}", file=sys.stderr)
    if rep.remaining:
        print(f"{len(rep.remaining)} job(s) not restored: "
              f"{', '.join(sorted(rep.remaining, key=job_order))}", file=sys.stderr)
    if rep.error:
        print(f"error: {rep.error}; run --restore again when Slurm answers", file=sys.stderr)
    return 0 if rep.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_guarded(lambda: _run(args))


if __name__ == "__main__":
    sys.exit(main())
