"""The cycle on a scripted backend: skip on controller trouble, write-ahead state, dry run, failed and
unknown updates, loud policy fallbacks, a planner that throws, SIGTERM restore, metrics and log line."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import signal
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import generate_latest
from service_helpers import NullLog, ScriptedBackend, config, pending, recorded, snapshot, with_site

from rltune_daemon.domain import NodeAlloc, PendingState, RunningJob
from rltune_daemon.domain.arrays import F64
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.domain.updates import Fate, UpdateStatus
from rltune_daemon.policies.base import Policy
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.policy import PLACER_FALLBACK_REASONS, PolicyChoice
from rltune_daemon.service.statefile import StateFile


def _queue() -> list:  # type: ignore[type-arg]
    # sjf puts the 2-minute job first although Slurm's priorities favour the 1-hour one
    return [pending("1", limit=3600, prio=1002), pending("2", limit=120, prio=1001), pending("3", limit=600)]


def _daemon(tmp_path: Path, backend: ScriptedBackend, **kw: object) -> tuple[Daemon, NullLog, io.StringIO]:
    cfg = config(tmp_path, **kw)  # type: ignore[arg-type]
    log, out = NullLog(), io.StringIO()
    d = Daemon(cfg, backend, state_file=StateFile(cfg.resolved_state_file()), log=log, metrics=Metrics(),
               out=out)
    return d, log, out


def _sample(d: Daemon, name: str, **labels: str) -> float:
    v = d.metrics.registry.get_sample_value(name, labels)
    return 0.0 if v is None else v


def test_controller_down_skips_without_writing_and_counts(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())], down=True)
    d, log, _ = _daemon(tmp_path, backend)
    rep = d.cycle()
    assert rep.outcome == "skipped" and rep.errors[0].startswith("controller_down:")
    assert backend.applied == [] and not (tmp_path / "state.db").exists()
    assert _sample(d, "rltune_errors_total", kind="controller_down") == 1
    assert _sample(d, "rltune_cycles_total", outcome="skipped") == 1
    line = log.named("cycle")[0]
    assert line["outcome"] == "skipped" and line["errors"] == 1 and "unreachable" in line["error"]
    backend.down = False
    assert d.cycle().outcome == "applied" and backend.applied  # alive, and back to work


def test_live_cycle_writes_state_before_slurm_and_reorders(tmp_path: Path) -> None:
    snap = snapshot(_queue())
    seen_on_disk: list[dict] = []  # type: ignore[type-arg]

    class Recording(ScriptedBackend):
        def apply(self, snapshot, updates, **kw):  # type: ignore[no-untyped-def, override]
            seen_on_disk.append(recorded(tmp_path / "state.json"))
            return super().apply(snapshot, updates, **kw)

    backend = Recording([snap])
    d, log, _ = _daemon(tmp_path, backend)
    rep = d.cycle()
    assert rep.outcome == "applied" and rep.changed == rep.priority_updates > 0
    sites = {u.job_id: u.site_factor for u in backend.applied[0]}
    prio = {j.id: s.priority - s.site_factor + sites.get(j.id, s.site_factor)
            for j, s in zip(snap.pending, snap.pending_state, strict=True)}
    assert sorted(prio, key=lambda j: -prio[j]) == ["2", "3", "1"]  # the plan's (sjf) order
    intents = seen_on_disk[0]["jobs"]
    assert {j: f["fields"]["site_factor"]["value"] for j, f in intents.items()} == sites
    assert not any(f["fields"]["site_factor"]["confirmed"] for f in intents.values())
    final = recorded(tmp_path / "state.json")["jobs"]
    assert all(f["fields"]["site_factor"]["confirmed"] for f in final.values())
    assert _sample(d, "rltune_priority_updates_total") == rep.priority_updates
    assert log.named("changes")[0]["priority"] == rep.priority_updates


def test_dry_run_writes_nothing_and_prints_the_table(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())])
    d, log, out = _daemon(tmp_path, backend, dry_run=True)
    rep = d.cycle()
    assert rep.outcome == "dry_run" and rep.changed > 0
    assert backend.applied == [] and not (tmp_path / "state.db").exists()
    text = out.getvalue()
    assert "nothing was written to Slurm" in text and "FALLBACK" not in text
    header = next(ln for ln in text.splitlines() if ln.startswith("rank"))
    assert header.split() == ["rank", "job", "user", "partition", "priority", "proposed", "placement",
                              "reason"]
    assert log.named("dry_run_change")


def test_failed_and_unknown_updates_are_counted_and_settled_by_the_next_read(tmp_path: Path) -> None:
    snap = snapshot(_queue())
    backend = ScriptedBackend([snap], statuses={"2": UpdateStatus.UNKNOWN, "1": UpdateStatus.FAILED})
    d, log, _ = _daemon(tmp_path, backend)
    rep = d.cycle()
    assert (rep.failed, rep.unknown) == (1, 1)
    assert _sample(d, "rltune_errors_total", kind="update_failed") == 1
    assert _sample(d, "rltune_errors_total", kind="update_unknown") == 1
    assert {e["job"] for e in log.named("update_not_applied")} == {"1", "2"}
    sites = {u.job_id: u.site_factor for u in backend.applied[0]}
    # next read: job 2's update did land after all, job 1's did not
    backend.snapshots = [with_site(snap, {"2": sites["2"], "3": sites.get("3", 0)})]
    backend.statuses = {}
    d.cycle()
    assert d.state.jobs["2"].fields["site_factor"].confirmed
    # only the priority still wrong is re-sent (job 2's placement hint was not in the scripted read, so it
    # may be re-sent; that is the hint rule's business, not this test's)
    assert [u.job_id for u in backend.applied[1] if u.site_factor is not None] == ["1"]


def test_missing_model_falls_back_loudly(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())])
    d, log, out = _daemon(tmp_path, backend, model=str(tmp_path / "models" / "none"), base_policy="fcfs",
                          dry_run=True)
    assert d.choice.policy.name == "fcfs" and d.choice.fallback
    d.announce()
    assert log.named("policy_fallback")[0]["model"].endswith("none")
    d.cycle()
    assert out.getvalue().startswith("!!! FALLBACK: ")
    assert log.named("cycle")[0]["fallback"] == d.choice.fallback
    text = generate_latest(d.metrics.registry).decode()
    info = [ln for ln in text.splitlines() if ln.startswith("rltune_model_info{")]
    assert len(info) == 1 and 'fallback="' in info[0] and 'fallback=""' not in info[0]


def test_model_behind_its_own_heldout_record_is_not_acted_on_unless_configured(tmp_path: Path) -> None:
    """A shipped model whose manifest shows it behind multifactor beyond noise: the daemon leaves Slurm's
    order alone (whatever base_policy says), logs why once and exports it; ``run_model_behind_base``
    runs the model anyway."""
    import shutil

    model = tmp_path / "model"
    shutil.copytree(Path(__file__).parents[2] / "models" / "testbed-multifactor", model)
    path = model / "manifest.json"
    manifest = json.loads(path.read_text())
    ahead, behind = [2.0, 3.0, 4.0, 5.0], [2.5, 3.4, 4.6, 5.5]
    manifest["heldout"] = {"windows": 4, "model": {"bsld": 4.0}, "multifactor": {"bsld": 3.5},
                           "per_window": {"model": {"bsld": behind}, "multifactor": {"bsld": ahead},
                                          "base": {"bsld": ahead}}}
    path.write_text(json.dumps(manifest))
    backend = ScriptedBackend([snapshot(_queue())])
    d, log, _ = _daemon(tmp_path, backend, model=str(model), base_policy="fcfs")
    d.announce()
    assert d.choice.policy.name == "multifactor" and d.choice.fallback_kind == "behind_base"
    (warned,) = log.named("policy_fallback")
    assert "behind multifactor: bounded slowdown 4.00 against 3.50" in warned["reason"]
    assert _sample(d, "rltune_model_fallback", reason="behind_base") == 1
    assert _sample(d, "rltune_model_fallback", reason="unusable") == 0
    d.cycle()
    assert len(log.named("policy_fallback")) == 1  # said once, not every cycle
    assert not [u for batch in backend.applied for u in batch if u.site_factor]  # Slurm's order stands
    (tmp_path / "anyway").mkdir()
    d2, log2, _ = _daemon(tmp_path / "anyway", ScriptedBackend([snapshot(_queue())]), model=str(model),
                          base_policy="fcfs", run_model_behind_base=True)
    d2.announce()
    assert d2.choice.policy.name == "rltune" and not d2.choice.fallback
    assert "behind multifactor" in log2.named("model_behind_base")[0]["reason"]
    assert _sample(d2, "rltune_model_fallback", reason="behind_base") == 0


class _Broken(Policy):
    name = "broken-model"

    def scores(self, view: QueueView) -> F64:
        raise RuntimeError("tensor shape mismatch")


def test_model_failing_while_scoring_is_replaced_by_the_base_policy(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())])
    d, _log, _ = _daemon(tmp_path, backend)
    d.choice = PolicyChoice(_Broken(), model="models/x", schema_hash="abc")
    rep = d.cycle()
    assert rep.outcome == "applied" and "failed while scoring" in rep.fallback
    assert d.choice.policy.name == "sjf" and _sample(d, "rltune_errors_total", kind="policy") == 1


def test_a_throwing_heuristic_skips_the_cycle_but_not_the_daemon(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())])
    d, _, _ = _daemon(tmp_path, backend)
    d.choice = PolicyChoice(_Broken())
    rep = d.cycle()
    assert rep.outcome == "skipped" and rep.errors[0].startswith("plan:") and backend.applied == []
    assert _sample(d, "rltune_errors_total", kind="plan") == 1
    assert d.cycle().cycle == 2


def test_sigterm_restores_every_change(tmp_path: Path) -> None:
    snap = snapshot(_queue())
    backend = ScriptedBackend([snap])
    d, log, _ = _daemon(tmp_path, backend, interval=5)

    # one cycle, then SIGTERM arrives while the loop sleeps
    orig_cycle = d.cycle

    def cycle_then_stop():  # type: ignore[no-untyped-def]
        rep = orig_cycle()
        sites = {u.job_id: u.site_factor for u in backend.applied[-1]}
        backend.snapshots = [with_site(snap, sites)]
        backend.reads = 0
        d.request_stop(signal.SIGTERM)
        return rep

    d.cycle = cycle_then_stop  # type: ignore[method-assign]
    assert d.run() == 0
    restore = backend.applied[-1]
    assert {u.site_factor for u in restore} == {0} and len(restore) == len(backend.applied[0])
    assert d.state.jobs == {} and recorded(tmp_path / "state.json")["jobs"] == {}
    assert log.named("stopped")[0]["restored_jobs"] == len(restore)


def test_restore_after_migrating_an_earlier_versions_json_state_file(tmp_path: Path) -> None:
    snap = snapshot(_queue())
    backend = ScriptedBackend([snap])
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    d, _, _ = _daemon(earlier, backend)
    d.cycle()
    sites = {u.job_id: u.site_factor for u in backend.applied[0]}
    # what an earlier version left: its JSON state file, where the configuration names it
    (tmp_path / "state.json").write_text(json.dumps(d.state.to_json(), indent=1, sort_keys=True) + "\n")
    assert StateFile(tmp_path / "state.json").migrate() == tmp_path / "state.json.migrated"
    backend = ScriptedBackend([with_site(snap, sites)])
    d, _, _ = _daemon(tmp_path, backend)
    assert set(d.state.jobs) == set(sites)
    rep = d.restore()
    assert rep.ok and rep.restored_jobs == len(sites)
    assert {u.site_factor for u in backend.applied[-1]} == {0} and len(backend.applied[-1]) == len(sites)
    assert d.state.jobs == {} and recorded(tmp_path / "state.json")["jobs"] == {}


def test_metrics_have_no_per_job_labels(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue(), busy={"p100-1": 4})])
    d, _, _ = _daemon(tmp_path, backend)
    d.cycle()
    text = generate_latest(d.metrics.registry).decode()
    for name in ("rltune_cycle_seconds_bucket", "rltune_pending_jobs", "rltune_queue_wait_seconds_bucket",
                 "rltune_gpu_utilization_ratio", "rltune_priority_updates_total",
                 "rltune_placement_hints_total", 'rltune_errors_total{kind="controller_down"}',
                 "rltune_model_info", "rltune_milp_fallbacks_total"):
        assert name in text, name
    assert _sample(d, "rltune_pending_jobs") == 3
    assert np.isclose(_sample(d, "rltune_gpu_utilization_ratio"), 4 / 13)
    labels = {m for ln in text.splitlines() if ln[:1] != "#" for m in re.findall(r'[{,](\w+)="', ln)}
    assert labels == {"kind", "action", "outcome", "result", "model", "schema_hash", "fallback", "reason",
                      "le"}


def test_milp_fallbacks_are_counted_by_reason_and_logged(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A clean cycle solves with CBC and counts nothing; when CBC fails (mocked: a solver failure cannot be
    produced on demand) the greedy placement is used, counted under its reason, and the log says why."""
    import pulp

    from rltune_daemon.placement import milp

    (tmp_path / "clean").mkdir()
    (tmp_path / "broken").mkdir()
    d, log, _ = _daemon(tmp_path / "clean", ScriptedBackend([snapshot(_queue())]))
    d.cycle()
    assert {r: _sample(d, "rltune_milp_fallbacks_total", reason=r) for r in PLACER_FALLBACK_REASONS} == \
        dict.fromkeys(PLACER_FALLBACK_REASONS, 0.0)
    assert not log.named("milp_fallback")
    calls = []

    def broken(prob: object, opts: object) -> None:
        calls.append(1)
        raise pulp.PulpSolverError("cbc crashed")

    monkeypatch.setattr(milp, "_solve_lp", broken)
    d, log, _ = _daemon(tmp_path / "broken", ScriptedBackend([snapshot(_queue())]))
    d.cycle()
    assert calls and _sample(d, "rltune_milp_fallbacks_total", reason="solver-error") == len(calls)
    assert _sample(d, "rltune_milp_fallbacks_total", reason="timeout") == 0
    (line,) = log.named("milp_fallback")
    assert line["count"] == len(calls) and line["last"] == "solver-error: cbc crashed"


def _triggers(log: NullLog) -> list[str]:
    return [e["trigger"] for e in log.named("cycle")]


def test_a_queue_change_starts_the_next_cycle_early(tmp_path: Path) -> None:
    """Checks every ``react`` s: three unchanged, then a new job -> the second cycle starts after four
    checks (20 of the 60 s), labelled ``queue``; the daemon's own writes do not count as a change."""
    backend = ScriptedBackend([snapshot(_queue())], name="sim", watches=["same"] * 3 + ["new"])
    d, log, _ = _daemon(tmp_path, backend, interval=60, react=5, sim__max_cycles=2)
    assert d.run() == 0
    assert _triggers(log) == ["start", "queue"] and backend.checks == 4 and backend.reads == 2
    assert _sample(d, "rltune_queue_checks_total", result="unchanged") == 3
    assert _sample(d, "rltune_queue_checks_total", result="changed") == 1


def test_an_unchanged_queue_waits_the_full_interval(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())], name="sim")
    d, log, _ = _daemon(tmp_path, backend, interval=60, react=5, sim__max_cycles=2)
    d.run()
    assert _triggers(log) == ["start", "interval"] and backend.checks == 11  # at 5, 10, ..., 55 s


def test_react_off_or_not_shorter_than_interval_means_no_checks(tmp_path: Path) -> None:
    for react in (0, 60):
        backend = ScriptedBackend([snapshot(_queue())], name="sim", watches=["new"])
        d, log, _ = _daemon(tmp_path, backend, interval=60, react=react, sim__max_cycles=2)
        d.run()
        assert _triggers(log) == ["start", "interval"] and backend.checks == 0


def test_failed_queue_checks_are_counted_logged_once_and_the_interval_still_runs(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())], name="sim", watches=["down"])
    d, log, _ = _daemon(tmp_path, backend, interval=60, react=5, sim__max_cycles=3)
    d.run()
    assert _triggers(log) == ["start", "interval", "interval"]
    assert _sample(d, "rltune_queue_checks_total", result="error") == 22
    assert len(log.named("queue_check_failed")) == 1  # once per outage, not every 5 s


def test_a_queue_check_that_throws_is_an_error_not_a_crash(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())], name="sim", watches=["bug", "new"])
    d, log, _ = _daemon(tmp_path, backend, interval=60, react=5, sim__max_cycles=2)
    assert d.run() == 0
    assert _triggers(log) == ["start", "queue"]
    assert _sample(d, "rltune_queue_checks_total", result="error") == 1
    assert log.named("queue_check_failed")[0]["kind"] == "internal"


def test_start_says_when_the_daemon_runs_other_settings_than_the_models_training(tmp_path: Path) -> None:
    """A model learns the order that pays off under its training's guard: an admin who runs another guard
    is told at start and by --check-config, and nothing is said where they agree or the manifest predates
    recording them. Queue checks are not compared (training skips them by default)."""
    import contextlib
    import shutil

    from rltune_daemon.cli.daemon import check_config
    from rltune_daemon.service.policy import trained_under

    model = tmp_path / "model"
    shutil.copytree(Path(__file__).parents[2] / "models" / "testbed-multifactor", model)
    manifest_path = model / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest.pop("rollouts", None)
    # without its held-out record the daemon acts on the model: what it says about settings shows
    manifest.pop("heldout", None)
    manifest_path.write_text(json.dumps(manifest))
    d, log, _ = _daemon(tmp_path, ScriptedBackend([snapshot(_queue())]), model=str(model))
    assert not d.choice.fallback and d.choice.identity["rollouts"] is None
    d.announce()
    assert not log.named("model_trained_under")  # nothing recorded: nothing to compare

    trained = {**config(tmp_path).loop_settings(), "react": 0.0, "starvation_reference": "both"}
    manifest["rollouts"] = trained
    manifest_path.write_text(json.dumps(manifest))
    d, log, _ = _daemon(tmp_path, ScriptedBackend([snapshot(_queue())]), model=str(model))
    d.announce()
    (note,) = [e["note"] for e in log.named("model_trained_under")]
    assert "starvation_reference = 'priority' (trained under 'both')" in note and "react" not in note
    assert note.endswith(" or train it under 'priority' (rltune train --config with starvation_reference = "
                         "'priority')")
    assert not d.choice.fallback and d.choice.model == str(model)  # the daemon still runs the model

    same = config(tmp_path, model=str(model), planner__starvation_reference="both",
                  planner__starvation_stretch=4)
    assert trained_under(d.choice.identity, same.loop_settings()) == (
        "this daemon runs starvation_stretch = 4.0 (trained under 2.0): the model learned its order under "
        "its training settings; compare it with its base policy under yours (rltune evaluate --config takes "
        "the daemon's interval and starvation_* keys; docs/operations.md, 'Model or base policy?')")
    agree = config(tmp_path, model=str(model), planner__starvation_reference="both")
    assert trained_under(d.choice.identity, agree.loop_settings()) == ""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert check_config(config(tmp_path, model=str(model)), None) == 0
    printed = out.getvalue()
    assert "\nnote: this daemon runs starvation_reference = 'priority' (trained under 'both')" in printed


# ---- the undo record and suspect reads ----------------------------------------------------------------


def test_a_record_goes_only_when_slurm_says_the_job_is_over(tmp_path: Path) -> None:
    snap = snapshot(_queue())
    backend = ScriptedBackend([snap])
    d, _, _ = _daemon(tmp_path, backend)
    d.cycle()
    recorded = set(d.state.jobs)
    assert recorded
    gone = next(iter(recorded))
    sites = {u.job_id: u.site_factor for u in backend.applied[0]}
    backend.snapshots, backend.reads = [with_site(snap, sites, drop={gone})], 0
    backend.fates = {gone: Fate("unknown")}
    for _ in range(5):  # no answer from Slurm: the record stays, however many reads miss the job
        rep = d.cycle()
        assert rep.outcome == "applied" and gone in d.state.jobs and rep.forgotten == 0
    backend.fates = {gone: Fate("alive", "PENDING")}  # Slurm still has it: the read missed it
    rep = d.cycle()
    assert rep.outcome == "skipped" and rep.suspect == "vanished_alive" and gone in d.state.jobs
    assert _sample(d, "rltune_suspect_reads_total", reason="vanished_alive") == 1
    backend.fates = {gone: Fate("ended", "CANCELLED")}
    rep = d.cycle()
    assert rep.forgotten == 1 and gone not in d.state.jobs
    assert [gone] in backend.confirmed


def test_updates_beyond_the_per_cycle_limit_follow_in_later_cycles(tmp_path: Path) -> None:
    snap = snapshot(_queue())
    backend = ScriptedBackend([snap])
    d, _, _ = _daemon(tmp_path, backend, slurm__max_updates_per_cycle=1)
    sites: dict[str, int] = {}
    deferred = []
    for _ in range(4):
        before = len(backend.applied)
        rep = d.cycle()
        deferred.append(rep.deferred)
        for ups in backend.applied[before:]:
            assert len(ups) == 1  # one job per cycle
            sites.update({u.job_id: u.site_factor for u in ups if u.site_factor is not None})
        backend.snapshots, backend.reads = [with_site(snap, sites)], 0
    assert deferred[0] >= 1 and deferred[-1] == 0
    (tmp_path / "dry").mkdir()
    dry, _, out = _daemon(tmp_path / "dry", ScriptedBackend([snap]), slurm__max_updates_per_cycle=1,
                          dry_run=True)
    dry.cycle()
    assert "1 job(s) would change this cycle, 2 more in later cycles" in out.getvalue()
    assert _sample(d, "rltune_deferred_updates") == 0
    assert backend.applied[0][0].job_id == "2"  # the head of the plan (the 2-minute job) went first
    assert d.cycle().changed == 0  # all written


def test_dry_run_logs_jobs_at_debug_and_prints_the_table_only_when_asked(tmp_path: Path) -> None:
    backend = ScriptedBackend([snapshot(_queue())])
    d, log, out = _daemon(tmp_path, backend, dry_run=True)
    d.cycle()
    assert {lvl for lvl, e, _ in log.events if e == "dry_run_change"} == {"debug"}
    assert [e for _, e, _ in log.events if e == "cycle"] == ["cycle"]  # the one summary line
    cfg = config(tmp_path, dry_run=True)
    quiet = io.StringIO()
    Daemon(cfg, ScriptedBackend([snapshot(_queue())]), state_file=StateFile(None), log=NullLog(),
           metrics=Metrics(), out=quiet, table=False).cycle()
    assert quiet.getvalue() == "" and "rank" in out.getvalue()


def test_start_waits_are_counted_per_gpu_class_and_known_partition_only() -> None:
    """A job seen pending and then running adds its wait to its GPU class and partition; a partition
    name the cluster does not list (text a user controls) is counted as ``other``, never as a label."""
    m = Metrics()
    big, _ = pending("1", gpus=8, submit=0.0)
    small, _ = pending("2", gpus=1, submit=100.0)
    odd = dataclasses.replace(small, id="3", partition='x"}evil')
    queue = [(j, PendingState(priority=1)) for j in (big, small, odd)]
    m.observe_snapshot(snapshot(queue))
    running = tuple(RunningJob(j, 700.0, 4000.0, (NodeAlloc("p100-1", j.gpus),)) for j in (big, small, odd))
    m.observe_snapshot(dataclasses.replace(snapshot([]), running=running))
    text = generate_latest(m.registry).decode()
    assert 'rltune_job_start_wait_seconds_sum{gpus="5-8",partition="gpu"} 700.0' in text
    assert 'rltune_job_start_wait_seconds_sum{gpus="1",partition="gpu"} 600.0' in text
    assert 'rltune_job_start_wait_seconds_count{gpus="1",partition="other"} 1.0' in text
    assert "evil" not in text
