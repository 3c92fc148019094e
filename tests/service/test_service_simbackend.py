"""``--backend sim``: the simulated Slurm steps like the engine, applies SiteFactors/hints through the
writer's own validation, and the CLI runs cycles on the bundled trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from rltune_daemon.domain.updates import JobUpdate, UpdateStatus
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.sim.engine import simulate
from rltune_daemon.sim.slurm import SimSlurm
from rltune_daemon.traces import load_workload


@pytest.fixture(scope="module")
def small():  # type: ignore[no-untyped-def]
    w = load_workload("testbed")
    return w.with_jobs(w.jobs[:150])


def test_untouched_sim_equals_the_engine(small) -> None:  # type: ignore[no-untyped-def]
    """With no updates, stepping the simulated Slurm check by check starts every job exactly when the
    engine's own run under multifactor does: queue checks that change nothing add no scheduling pass."""
    s = SimSlurm(small, tick=5.0)
    while not s.done():
        s.read()
        assert s.advance() > 0
    ref = simulate(s.workload, Multifactor())
    np.testing.assert_array_equal(s.sim.start, ref.start)
    np.testing.assert_array_equal(s.sim.end, ref.end)
    assert s.sim.stats["ticks"] > 100 and s.sim.stats["passes"] == ref.stats["passes"]


def test_summary_mid_run_counts_running_jobs_up_to_now(small) -> None:  # type: ignore[no-untyped-def]
    """Stopped early (``max_cycles``), the summary reports utilisation so far, not 0 or NaN."""
    s = SimSlurm(small)
    while not s.read().running:
        s.advance()
    for _ in range(10):
        s.advance()
    mid = s.summary(baseline=False)["daemon"]
    assert 0.0 < mid["utilization"] <= 1.0 and np.isfinite(mid["wait_mean"])


def _busy(s: SimSlurm, pending: int = 3) -> None:
    while len(s.read().pending) < pending:
        s.advance()
        assert not s.done()


def test_site_factor_and_hint_apply_through_the_writer(small) -> None:  # type: ignore[no-untyped-def]
    s = SimSlurm(small)
    _busy(s)
    snap = s.read()
    last = snap.pending[-1].id
    top = max(st.priority for st in snap.pending_state)
    res = s.apply(snap, [JobUpdate(last, site_factor=top + 100)], dry_run=True)
    assert res.by_job()[last].status is UpdateStatus.PLANNED and s.site == {}
    res = s.apply(snap, [JobUpdate(last, site_factor=top + 100)])
    after = s.read()
    if last in {j.id for j in after.pending}:  # it may have started at once (Slurm schedules after updates)
        st = dict(zip([j.id for j in after.pending], after.pending_state, strict=True))[last]
        assert st.site_factor == top + 100 and st.priority == max(x.priority for x in after.pending_state)
    assert res.by_job()[last].status is UpdateStatus.APPLIED
    other = after.pending[0].id
    res = s.apply(after, [JobUpdate(other, exc_nodes=("p100-1", "p100-2", "k80-1", "k80-2"))])
    assert res.by_job()[other].status is UpdateStatus.APPLIED
    row = int(other) - 1
    if row in s.engine.hints:
        assert [s.engine.cl.names[i] for i in s.engine.hints[row]] == ["m40-1"]
    running = s.read().running[0].job.id
    refused = s.apply(s.read(), [JobUpdate(running, site_factor=5)]).by_job()[running]
    assert refused.status is UpdateStatus.REFUSED


def test_cli_runs_cycles_on_the_bundled_trace() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
    env |= {"RLTUNE_SIM__SPEEDUP": "0", "RLTUNE_SIM__MAX_CYCLES": "200", "RLTUNE_BASE_POLICY": "sjf",
            "RLTUNE_METRICS__ENABLED": "false"}
    res = subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", "--backend", "sim"], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = [json.loads(ln) for ln in res.stderr.splitlines() if ln.startswith("{")]
    cycles = [ln for ln in lines if ln["event"] == "cycle"]
    assert len(cycles) == 200 and all(c["backend"] == "sim" and c["outcome"] == "applied" for c in cycles)
    assert any(c["jobs_seen"] > 0 for c in cycles) and any(c["priority_updates"] > 0 for c in cycles)
    assert lines[0]["event"] == "starting" and lines[0]["state_file"] == "(memory)"
    assert lines[1]["event"] == "policy" and lines[1]["policy"].startswith("sjf")
    assert "simulated" in res.stdout and "jobs finished" in res.stdout


def test_queue_check_matches_the_read_until_a_job_arrives_starts_or_ends(small) -> None:  # type: ignore[no-untyped-def]
    s = SimSlurm(small)
    _busy(s)
    s.read()
    assert s.last is not None and s.queue() == s.last.queue
    before = s.last.queue
    while s.queue() == before:
        s.advance()
    assert s.queue() != before and not s.done()


def test_once_starts_at_the_first_check_with_a_pending_job(small) -> None:  # type: ignore[no-untyped-def]
    """A full run starts before the first arrival (its first read is empty, as offline daemon mode's
    first tick); ``--once`` skips, without cycles, to the first check that has a queue to show."""
    s = SimSlurm(small)
    assert s.sim.now == float(small.jobs[0].submit) and not s.read().pending
    s.skip_to_pending()
    snap = s.read()
    assert snap.pending and s.site == {} and s.exc == {}
    fresh = SimSlurm(small)
    while not fresh.read().pending:
        fresh.advance()
    assert fresh.sim.now == s.sim.now  # the check a full run's cycles reach first with a queue


def test_cli_once_dry_run_shows_a_table() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
    env |= {"RLTUNE_SIM__JOBS": "60", "RLTUNE_BASE_POLICY": "sjf", "RLTUNE_METRICS__ENABLED": "false"}
    res = subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", "--backend", "sim", "--dry-run",
                          "--once"], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "(no pending jobs)" not in res.stdout and "rank  job" in res.stdout
    cycle = next(json.loads(ln) for ln in res.stderr.splitlines() if '"event": "cycle"' in ln)
    assert cycle["jobs_seen"] > 0 and cycle["outcome"] == "dry_run"
