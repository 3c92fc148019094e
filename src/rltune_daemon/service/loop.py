"""The daemon's cycle: read a Snapshot, ``plan()`` it with the simulator's planner, apply the Plan.

Failure rules: a controller that does not answer (``ControllerDown``/``CommandTimeout``), a read that
looks incomplete (``SuspectRead``: cut output, a queue sprio or a second read contradicts, a job the
daemon changed that the read missed but Slurm still lists) or any other Slurm error skips the cycle
before anything is written and is counted; a failed or unknown update is settled by re-reading on
the next cycle; an exception inside the planner or a learned model is logged and counted, never
fatal (a model that fails is replaced by the base policy). The state file is saved before updates
are sent, and a job leaves it only when Slurm confirms the job is over or our restore landed.
SIGTERM/SIGINT finish the current batch of updates, then put every job back.
"""

from __future__ import annotations

import signal
import sys
import time
from collections import Counter
from dataclasses import KW_ONLY, asdict, dataclass, field
from types import FrameType
from typing import Any, TextIO

from rltune_daemon.core.applier import Applier, Decision, Settled
from rltune_daemon.core.cycle import Core, Observer, Stage, Where, confirm_unlisted, run_cycle
from rltune_daemon.core.record import DaemonState
from rltune_daemon.core.steer import Step
from rltune_daemon.domain import Plan, Snapshot, job_order
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.updates import ApplyResult, ReadInfo, UpdateStatus
from rltune_daemon.errors import UserError
from rltune_daemon.planner import plan as make_plan
from rltune_daemon.planner.plan import PlannerMemory
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.registry import make_policy
from rltune_daemon.service import dryrun
from rltune_daemon.service.backends import HISTORY_RETRY_S, Backend, SlurmBackend
from rltune_daemon.service.config import DaemonConfig
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.notify import Notifier
from rltune_daemon.service.policy import CountingPlacer, PolicyChoice, choose_policy, trained_under
from rltune_daemon.service.statefile import StateError, StateFile
from rltune_daemon.slurm.errors import (
    CallBudgetExceeded,
    CommandTimeout,
    ControllerDown,
    ParseError,
    PermissionDenied,
    SlurmError,
    SuspectRead,
)


def error_kind(err: BaseException) -> str:
    """The ``rltune_errors_total{kind}`` label of an exception."""
    for cls, kind in ((SuspectRead, "suspect_read"), (ControllerDown, "controller_down"),
                      (CommandTimeout, "timeout"), (PermissionDenied, "permission"), (ParseError, "parse"),
                      (CallBudgetExceeded, "call_budget"), (SlurmError, "slurm"), (StateError, "state")):
        if isinstance(err, cls):
            return kind
    return "internal"


@dataclass
class CycleReport:
    """What one cycle saw and did: the canonical log line."""

    cycle: int
    _: KW_ONLY  # the rest by name: most of them are counts side by side
    outcome: str = "skipped"  # applied | dry_run | skipped
    trigger: str = "start"  # start | interval | queue (a queue check saw a job arrive, start or end)
    jobs_seen: int = 0
    running: int = 0
    planned: int = 0
    changed: int = 0
    skipped: int = 0
    priority_updates: int = 0
    hints_set: int = 0
    hints_cleared: int = 0
    hints_expired: int = 0
    failed: int = 0
    unknown: int = 0
    refused: int = 0
    managed: int = 0
    unparsed: int = 0
    deferred: int = 0
    forgotten: int = 0
    suspect: str = ""
    seconds: float = 0.0
    read_seconds: float = 0.0
    plan_seconds: float = 0.0
    apply_seconds: float = 0.0
    save_seconds: float = 0.0
    slurm_calls: int = 0
    slurm: dict[str, float] = field(default_factory=dict)  # slurmctld's own counts and backfill statistics
    policy: str = ""
    fallback: str = ""
    errors: list[str] = field(default_factory=list)


@dataclass
class RestoreReport:
    """``remaining``: jobs whose values could not be put back (and why); ``kept``: records of running
    jobs whose node lists cannot change until they are requeued (nothing to undo that acts now)."""

    restored_jobs: int = 0
    restored_fields: int = 0
    dropped: int = 0
    remaining: dict[str, str] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and not self.remaining


class Daemon:
    """One daemon process: configuration, backend, state, metrics, notifications and the loop."""

    def __init__(self, cfg: DaemonConfig, backend: Backend, *, state_file: StateFile, log: Any,
                 metrics: Metrics | None = None, notifier: Notifier | None = None,
                 out: TextIO | None = None, table: bool = True) -> None:
        self.cfg = cfg
        self.backend = backend
        self.state_file = state_file
        self.log = log
        self.metrics = metrics or Metrics()
        self.notifier = notifier or Notifier({})
        self.out = out or sys.stdout
        self.table = table  # --dry-run: print the table of proposed changes each cycle
        self.dry_run = cfg.dry_run
        self.choice = choose_policy(cfg.model, cfg.base_policy, cfg.run_model_behind_base)
        self.placer = CountingPlacer(cfg.planner.placer, cfg.planner.milp_time_limit)
        self.planner_cfg = cfg.planner_config()
        self.core = Core(Applier(cfg.planner.hint_cycles, cfg.planner.placement), state_file.load(),
                         cfg.slurm.max_updates_per_cycle)
        self.applier, self.state = self.core.applier, self.core.state
        self.memory = PlannerMemory(demoted_since=self.state.demoted_since)
        self.cycle_no = 0
        self.trigger = "start"
        self._watch_failing = False
        self._history_failing = False
        self._bad_records: dict[str, str] = {}  # job -> why its record did not parse (logged once)
        self.history_note = ""  # for the dry-run banner
        self.last_plan: Plan | None = None
        self.last_snapshot: Snapshot | None = None  # the last complete read, and what the cycle sent
        self.last_result: ApplyResult | None = None
        self.stop_signal: int | None = None
        if isinstance(backend, SlurmBackend):
            backend.runner.on_wait = self._tick
        self._publish_policy()  # logged by run(), after the CLI's 'starting' line

    # ---- policy ---------------------------------------------------------------------------------

    def _publish_policy(self) -> None:
        c = self.choice
        self.metrics.set_model(c.model or c.policy.name, c.schema_hash, c.fallback, c.fallback_kind)

    def announce(self) -> None:
        """Log which policy (and model file) decides, and any fallback. Called by ``run`` after the CLI's
        'starting' line, so a log reader sees the start first and the policy right after it."""
        c = self.choice
        if c.fallback:
            self.log.warning("policy_fallback", model=c.model, policy=c.policy.name, reason=c.fallback)
        else:
            self.log.info("policy", policy=c.described, **c.identity)
            if c.behind_base:
                self.log.warning("model_behind_base", model=c.model, reason=c.behind_base)
            if note := trained_under(c.identity, self.cfg.loop_settings()):
                self.log.info("model_trained_under", model=c.model, note=note)
        if self.placer.unavailable:
            self.log.warning("placer_fallback", reason=self.placer.unavailable)

    def _count_placer_fallbacks(self, rep: CycleReport, before: Counter[str]) -> None:
        """Add this cycle's MILP fallbacks to the metric by reason, and say why in the log (a missing
        MILP module was said once at start and is only counted)."""
        new = self.placer.fallbacks - before
        for reason, n in new.items():
            self.metrics.milp_fallbacks.labels(reason).inc(n)
        if sum(n for r, n in new.items() if r != "unavailable"):
            self.log.warning("milp_fallback", cycle=rep.cycle, count=sum(new.values()),
                             last=self.placer.last_fallback)

    def _drop_model(self, exc: BaseException) -> None:
        base = make_policy(self.cfg.base_policy)
        why = (f"model {self.choice.model} failed while scoring ({type(exc).__name__}: {exc}); "
               f"using {base.name}")
        self.choice = PolicyChoice(base, self.choice.model, "", why, fallback_kind="failed")
        self.metrics.errors.labels("policy").inc()
        self._publish_policy()
        self.announce()

    def _history_failed(self, rep: CycleReport, err: Exception) -> None:
        """Without finished runs a history-based policy (QSSF) still orders jobs, by requested time, so
        a failure is said once (and counted), never a skipped cycle."""
        self.metrics.errors.labels("history").inc()
        who = self.choice.label
        effect = self.choice.policy.without_history(who)
        if not self._history_failing:
            self.log.warning("history_unavailable", cycle=rep.cycle, policy=who, error=str(err),
                             effect=f"{effect}; retried every {HISTORY_RETRY_S / 60:g} minutes")
        self._history_failing = True
        self.history_note = (f"!{who} has no run history ({err}): {effect}; history needs Slurm "
                             "accounting (slurmdbd)")

    def _history_learned(self, rep: CycleReport, policy: Policy, runs: FinishedRuns, rewound: bool) -> None:
        source = (f"sacct, look-back {self.cfg.slurm.history_days:g} days" if self.backend.name == "slurm"
                  else "jobs the simulator finished")
        self.history_note = (f"{self.choice.label} history: {policy.runs_learned} finished run(s) learned "
                             f"({source})")
        self.metrics.history_runs.set(policy.runs_learned)
        if self._history_failing or rewound:
            self.log.info("history", cycle=rep.cycle, policy=self.choice.label, new_runs=len(runs),
                          runs=policy.runs_learned)
        self._history_failing = False

    # ---- one cycle ------------------------------------------------------------------------------

    def _save(self) -> None:
        """Commit what changed since the last save (durable on return); the journal finds what that is."""
        self.state_file.save(self.state)

    def _error(self, rep: CycleReport, err: BaseException, where: str) -> None:
        kind = error_kind(err)
        if kind == "internal" and where in ("plan", "policy"):
            kind = where
        self.metrics.errors.labels(kind).inc()
        if isinstance(err, SuspectRead):
            self.metrics.suspect_reads.labels(err.reason).inc()
            rep.suspect = err.reason
        rep.errors.append(f"{kind}: {err}")
        if isinstance(err, UserError):
            self.log.error("cycle_error", cycle=rep.cycle, kind=kind, where=where, error=str(err))
        else:
            self.log.error("cycle_error", cycle=rep.cycle, kind=kind, where=where, error=repr(err),
                           exc_info=err)

    def cycle(self) -> CycleReport:
        """Read, plan, apply once (see module docstring). Never raises for Slurm or planner trouble."""
        self.cycle_no += 1
        t0 = time.monotonic()
        rep = CycleReport(self.cycle_no, trigger=self.trigger, policy=self.choice.label,
                          fallback=self.choice.fallback)
        try:
            self._cycle(rep)
        except Exception as exc:  # the daemon outlives any bug in one cycle
            self._error(rep, exc, "cycle")
            rep.outcome = "skipped"
        rep.seconds = time.monotonic() - t0
        rep.slurm_calls = self.backend.calls()
        rep.managed = len(self.state.jobs)
        self._finish(rep)
        return rep

    def _tick(self) -> None:
        """While a call waits for Slurm's rate limit or between write batches: the watchdog goes on."""
        self.notifier.watchdog()

    def _stopping(self) -> bool:
        return self.stop_signal is not None

    def _note_bad_records(self, rep: CycleReport, skipped: list[tuple[str, str]]) -> None:
        """Records Slurm listed that did not parse: counted every cycle, logged once per job and reason."""
        if skipped:
            self.metrics.errors.labels("parse").inc(len(skipped))
        now: dict[str, str] = {}
        for job_id, why in skipped:
            now.setdefault(job_id, why)
            if self._bad_records.get(job_id) != why:
                self.log.warning("record_not_parsed", cycle=rep.cycle, job=job_id, reason=why,
                                 effect="left out of this cycle's plan; nothing is written to it")
        self._bad_records = now

    def _plan(self, snap: Snapshot, rep: CycleReport) -> Plan:
        """The plan of the chosen policy; a model that fails is replaced by the base policy for good
        and the plan made again (a failure of the base policy itself skips the cycle)."""
        before = self.placer.fallbacks.copy()
        try:
            try:
                return make_plan(snap, self.choice.policy, self.planner_cfg, self.memory, self.placer)
            except Exception as exc:
                if not (self.choice.model and not self.choice.fallback):
                    raise
                self._drop_model(exc)
                rep.policy, rep.fallback = self.choice.label, self.choice.fallback
                return make_plan(snap, self.choice.policy, self.planner_cfg, self.memory, self.placer)
        finally:
            self._count_placer_fallbacks(rep, before)

    def _cycle(self, rep: CycleReport) -> None:
        self.last_result = None
        rep.outcome = run_cycle(self.backend, self.core, self.choice.policy, lambda s: self._plan(s, rep),
                                _CycleHooks(self, rep), now=time.time, leave_order=self.choice.leave_order,
                                dry_run=self.dry_run, should_stop=self._stopping)

    def _count(self, rep: CycleReport, s: Settled, result: ApplyResult) -> None:
        rep.changed = len(s.changed_jobs)
        rep.priority_updates, rep.hints_set = s.priority_applied, s.hints_set
        rep.hints_cleared, rep.hints_expired = s.hints_cleared, s.hints_expired
        rep.failed, rep.unknown, rep.refused = len(s.failed), len(s.unknown), len(s.refused)
        m = self.metrics
        m.priority_updates.inc(s.priority_applied)
        m.placement_hints.labels("set").inc(s.hints_set)
        m.placement_hints.labels("cleared").inc(s.hints_cleared)
        m.placement_hints.labels("expired").inc(s.hints_expired)
        m.restored.inc(s.restored)
        m.errors.labels("update_failed").inc(len(s.failed))
        m.errors.labels("update_unknown").inc(len(s.unknown))
        for job_id, why in {**s.failed, **s.unknown}.items():
            status = UpdateStatus.FAILED if job_id in s.failed else UpdateStatus.UNKNOWN
            self.log.warning("update_not_applied", job=job_id, status=status.value, reason=why, rc=result.rc)

    def _print_dry_run(self, the_plan: Plan, snap: Snapshot, decision: Decision, display: dict[str, str],
                       result: ApplyResult) -> None:
        """The table (when ``table``) and, at debug level, one log line per job that would change; the
        cycle's own log line is the summary."""
        if self.table:
            text = dryrun.report(the_plan, snap, decision, policy=self.choice.label,
                                 fallback=self.choice.fallback, display=display, writes=len(result.lines),
                                 history=self.history_note if self.choice.policy.learns_history else "")
            print(text, file=self.out, flush=True)
        for row in dryrun.rows(the_plan, snap, decision, display):
            if row[5].endswith("*") or row[6].startswith(("->", "hint")):
                self.log.debug("dry_run_change", **dict(zip(dryrun.HEADERS, row, strict=True)))

    def _finish(self, rep: CycleReport) -> None:
        m = self.metrics
        m.cycle_seconds.observe(rep.seconds)
        m.cycles.labels(rep.outcome).inc()
        m.managed_jobs.set(rep.managed)
        m.last_cycle.set(time.time())
        fields = asdict(rep)
        fields["errors"] = len(rep.errors)
        fields["error"] = rep.errors[0] if rep.errors else ""
        for k in ("seconds", "read_seconds", "plan_seconds", "apply_seconds", "save_seconds"):
            fields[k] = round(fields[k], 4)
        fields["dry_run"] = self.dry_run
        fields["backend"] = self.backend.name
        (self.log.warning if rep.errors else self.log.info)("cycle", **fields)
        self.notifier.status(
            f"cycle {rep.cycle} {rep.outcome}: {rep.jobs_seen} pending, {rep.changed} changed"
            + (f", error: {rep.errors[0]}" if rep.errors else "")
            + (f", FALLBACK {rep.policy}" if rep.fallback else "")
        )
        self.notifier.watchdog(force=True)

    # ---- restore --------------------------------------------------------------------------------

    def restore(self) -> RestoreReport:
        """Put every recorded field back (``Applier.restore``): pending jobs entirely, running ones'
        SiteFactor; records go only for jobs Slurm confirms are over. Idempotent; a read that looks
        incomplete restores nothing and says so."""
        out = RestoreReport()
        try:
            snap = self.backend.read()
            info = self.backend.last or ReadInfo()
            fates = confirm_unlisted(self.backend, self.state, snap, info)
        except SlurmError as err:
            self.metrics.errors.labels(error_kind(err)).inc()
            out.error = str(err)
            out.remaining = {j: f"not restored ({err})" for j in self.state.jobs}
            return out
        decision = self.applier.restore(self.state, snap, fates)
        out.dropped = len(decision.dropped)
        if decision.changes:
            self.applier.begin(self.state, snap, decision, time.time())
            self._save()
            try:
                result = self.backend.apply(snap, decision.updates(),
                                            site_factor_unknown=info.site_factor_unknown, restore=True)
            except SlurmError as err:
                out.error = str(err)
            else:
                settled = self.applier.settle(self.state, decision, result)
                self.metrics.restored.inc(settled.restored)
                out.restored_jobs = len(settled.changed_jobs)
                out.restored_fields = settled.restored
                for job_id, why in {**settled.failed, **settled.unknown, **settled.refused}.items():
                    out.remaining[job_id] = why
        for job_id in self.state.jobs:
            if job_id in out.remaining:
                continue
            if job_id in decision.kept:
                out.kept[job_id] = decision.kept[job_id]
            else:
                out.remaining[job_id] = decision.unresolved.get(job_id) or out.error or "not restored"
        self._save()
        return out

    # ---- the loop -------------------------------------------------------------------------------

    def request_stop(self, signum: int, frame: FrameType | None = None) -> None:
        self.stop_signal = signum

    def _sleep(self, seconds: float) -> None:
        """Sleep in short steps: stop requests are seen within 0.25 s and the watchdog keeps ticking."""
        deadline = time.monotonic() + seconds
        while self.stop_signal is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.25))
            self.notifier.watchdog()

    def _wait(self, cycle_seconds: float) -> str:
        """Until the next cycle: ``interval`` after this one began, or sooner when a queue check (every
        ``react`` seconds) sees a job arrive, start or end. Returns what ended the wait. Time is the
        backend's clock: wall time on a cluster (where the cycle itself took some), simulated time on
        the simulator (whose clock moves only between cycles, on its own check grid)."""
        interval, react = self.cfg.interval, self.cfg.react
        step_max = react if 0 < react < interval else interval
        began = self.backend.clock() - (cycle_seconds if self.backend.name == "slurm" else 0.0)
        while self.stop_signal is None and not self.backend.done():
            step = min(step_max, interval - (self.backend.clock() - began))
            if step <= 1e-6:
                break
            self._sleep(self.backend.tick(step))
            if self.backend.clock() - began >= interval - 1e-6:
                break
            if self._queue_changed():
                return "queue"
        return "interval"

    def _queue_changed(self) -> bool:
        """One queue check (one ``squeue``). A failed check is counted and logged once per outage, then
        the full cycle at ``interval`` reports the trouble as usual; like a cycle, it never raises."""
        last = self.backend.last
        try:
            now = self.backend.watch()
        except Exception as err:  # the daemon outlives any failure of one check
            self.metrics.queue_checks.labels("error").inc()
            if not self._watch_failing:
                self.log.warning("queue_check_failed", kind=error_kind(err), error=str(err))
            self._watch_failing = True
            return False
        self._watch_failing = False
        changed = last is None or now != last.queue
        self.metrics.queue_checks.labels("changed" if changed else "unchanged").inc()
        return changed

    def run(self, once: bool = False) -> int:
        """Cycle until stopped (or once). Exit status: 0 ok, 1 when the last cycle was skipped (``--once``)
        or the final restore left jobs changed."""
        previous = {s: signal.signal(s, self.request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.announce()
            fallback = " (FALLBACK)" if self.choice.fallback else ""
            self.notifier.ready(f"policy {self.choice.label}{fallback}")
            rep = CycleReport(0)
            while self.stop_signal is None:
                rep = self.cycle()
                limit = self.cfg.sim.max_cycles if self.backend.name == "sim" else 0
                if once or self.backend.done() or (limit and self.cycle_no >= limit):
                    break
                self.trigger = self._wait(rep.seconds)
            if self.backend.name == "sim":
                summary = _flat(self.backend.summary())
                self.log.info("sim_summary", **summary)
                print(sim_summary_text(summary), file=self.out, flush=True)
            if self.stop_signal is not None:
                return self._shutdown()
            return 1 if once and rep.outcome == "skipped" else 0
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _shutdown(self) -> int:
        """Restore after SIGTERM/SIGINT. A read that failed or looked incomplete is tried again a few
        times (a restarting slurmctld, a cut output), then the jobs left are named in the log."""
        name = signal.Signals(self.stop_signal).name if self.stop_signal else "stop"
        self.notifier.stopping(f"{name}: restoring changed jobs")
        if self.dry_run or self.backend.name != "slurm" or not self.state.jobs:
            self.log.info("stopped", signal=name, restored=0)
            return 0
        rep = self.restore()
        for _ in range(SHUTDOWN_RETRIES):
            if not rep.error:
                break
            time.sleep(SHUTDOWN_RETRY_S)
            self.notifier.watchdog()
            rep = self.restore()
        level = self.log.info if rep.ok else self.log.error
        level("stopped", signal=name, restored_jobs=rep.restored_jobs, restored_fields=rep.restored_fields,
              dropped=rep.dropped, not_restored=len(rep.remaining), error=rep.error,
              not_restored_jobs=_ids_with_reasons(rep.remaining),
              kept_running=_ids_with_reasons(rep.kept))
        return 0 if rep.ok else 1


SHUTDOWN_RETRIES = 2
SHUTDOWN_RETRY_S = 2.0


def _ids_with_reasons(jobs: dict[str, str], limit: int = 50) -> dict[str, str]:
    return dict(sorted(jobs.items(), key=lambda kv: job_order(kv[0]))[:limit])


def _change_summary(decision: Decision, settled: Settled) -> dict[str, Any]:
    return {
        "jobs": sorted(settled.changed_jobs, key=job_order)[:50],
        "priority": settled.priority_applied, "hints_set": settled.hints_set,
        "hints_cleared": settled.hints_cleared, "hints_expired": settled.hints_expired,
        "hints": {j: ",".join(n) for j, n in list(decision.hints().items())[:20]},
    }


def sim_summary_text(s: dict[str, Any]) -> str:
    """Two lines a user without a cluster can judge the daemon by."""
    lines = [f"simulated {s.get('clock', 0) / 3600:.1f} h: {s.get('finished', 0)} jobs finished"]
    if "daemon_wait_mean" in s:
        lines.append(f"with rltune-daemon:  mean wait {s['daemon_wait_mean'] / 60:.1f} min, p95 "
                     f"{s['daemon_wait_p95'] / 60:.1f} min, GPU utilisation {s['daemon_utilization']:.1%}")
    if "multifactor_alone_wait_mean" in s:
        m = {k.removeprefix("multifactor_alone_"): v for k, v in s.items()}
        lines.append(f"Slurm multifactor alone: mean wait {m['wait_mean'] / 60:.1f} min, p95 "
                     f"{m['wait_p95'] / 60:.1f} min, GPU utilisation {m['utilization']:.1%}")
    return "\n".join(lines)


def _flat(summary: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in summary.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                out[f"{k}_{k2}"] = round(v2, 3) if isinstance(v2, float) else v2
        else:
            out[k] = round(v, 3) if isinstance(v, float) else v
    return out


class _CycleHooks(Observer):
    """The live daemon's side of one ``run_cycle``: its report, log lines, metrics, state file and
    watchdog (the simulator attaches none of these)."""

    def __init__(self, daemon: Daemon, rep: CycleReport) -> None:
        self.d = daemon
        self.rep = rep

    def stage(self, name: Stage, seconds: float) -> None:
        # the log line's plan time has always included the history read
        field_name = f"{'plan' if name == 'history' else name}_seconds"
        setattr(self.rep, field_name, getattr(self.rep, field_name) + seconds)
        self.d.notifier.watchdog()

    def failed(self, err: Exception, where: Where) -> None:
        if where == "history":
            self.d._history_failed(self.rep, err)
        else:
            self.d._error(self.rep, err, where)

    def listed(self, info: ReadInfo) -> None:
        self.d._note_bad_records(self.rep, info.skipped)

    def confirmed(self, snap: Snapshot, info: ReadInfo) -> None:
        rep = self.rep
        rep.jobs_seen, rep.running, rep.unparsed = len(snap.pending), len(snap.running), len(info.unparsed)
        rep.slurm = info.slurm_counts
        if info.slurm_metrics_error:
            self.d.log.warning("slurm_metrics_unavailable", error=info.slurm_metrics_error,
                               effect="reads are no longer cross-checked with slurmctld's own job counts")
        self.d.last_snapshot = snap
        self.d.metrics.observe_snapshot(snap)

    def learned(self, policy: Policy, runs: FinishedRuns, rewound: bool) -> None:
        self.d._history_learned(self.rep, policy, runs, rewound)

    def note(self, text: str) -> None:
        self.d.log.warning("reconcile", cycle=self.rep.cycle, note=text)

    def planned(self, step: Step) -> None:
        rep, d = self.rep, self.d
        rep.forgotten = step.forgotten
        d.last_plan = step.plan
        rep.deferred = step.decision.deferred
        d.metrics.deferred_updates.set(step.decision.deferred)
        rep.planned, rep.skipped = len(step.plan.entries), len(step.plan.skipped)

    def save(self, state: DaemonState) -> None:
        self.d._save()

    def dry_run(self, step: Step, snap: Snapshot, info: ReadInfo, result: ApplyResult) -> None:
        self.rep.changed = len({c.job_id for c in step.decision.changes})
        self.d.last_result = result
        self.d._print_dry_run(step.plan, snap, step.decision, info.display_ids, result)

    def applied(self, step: Step, settled: Settled, result: ApplyResult) -> None:
        self.d.last_result = result
        self.d._count(self.rep, settled, result)
        self.d.log.info("changes", cycle=self.rep.cycle, **_change_summary(step.decision, settled))
