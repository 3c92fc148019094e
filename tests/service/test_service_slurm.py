"""The daemon against a real local Slurm 22.05 (tests/slurm_fixtures.py): dry run changes nothing, one
live cycle makes Slurm's priority order equal the Plan's, exempt and running jobs are untouched, a stopped
slurmctld skips cycles while the real daemon process stays alive, SIGTERM restores everything.

Every GPU is held by a blocker for the whole module, so submitted GPU jobs pend.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import NullLog, config, recorded

from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.config import DaemonConfig
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.statefile import StateFile
from slurm_fixtures import TEST_USER, WAIT_S, SlurmTestCluster

pytestmark = pytest.mark.slurm


def _queue(c: SlurmTestCluster, user: str | None = None) -> dict[str, str]:
    """Pending jobs whose sjf order differs from Slurm's (all have the same multifactor priority)."""
    ids = {
        "long": c.submit("--gres=gpu:p100:2", "-t", "120", user=user),
        "mid": c.submit("--gres=gpu:k80:1", "-t", "30", user=user),
        "short": c.submit("--gres=gpu:1", "-t", "5", user=user),
        "tiny": c.submit("--gres=gpu:m40:1", "-t", "2", user=user),
    }
    c.wait_in_sprio(*ids.values())
    return ids


def _cfg(tmp_path: Path, c: SlurmTestCluster, **kw: Any) -> DaemonConfig:
    kw.setdefault("base_policy", "sjf")
    # every job reordered across sizes, none kept next in line: the sjf order then differs from Slurm's
    # in the first places, which is what these tests watch Slurm take up (or not)
    kw.setdefault("planner__reorder", "queue")
    kw.setdefault("planner__next_in_line", 0)
    return config(tmp_path, slurm__conf=c.conf, slurm__max_calls_per_cycle=40, **kw)


def _daemon(cfg: DaemonConfig) -> Daemon:
    return Daemon(cfg, SlurmBackend(cfg), state_file=StateFile(cfg.resolved_state_file()), log=NullLog(),
                  metrics=Metrics())


def _view(c: SlurmTestCluster) -> list[str]:
    """Everything the daemon could change, as Slurm shows it."""
    return sorted(c.squeue("%A|%Q|%n|%x|%T")) + sorted(f"{k}:{v}" for k, v in c.sprio().items())


def _env(cfg_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
    return env | {"RLTUNE_CONFIG": str(cfg_path)} | extra


def _cli(cfg_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", *args],
                          env=_env(cfg_path, **env), capture_output=True, text=True, timeout=120, check=False)


def test_dry_run_changes_nothing(c: SlurmTestCluster, tmp_path: Path) -> None:
    ids = _queue(c)
    _cfg(tmp_path, c)
    before = _view(c)
    res = _cli(tmp_path / "cfg.toml", "--dry-run", "--once")
    assert res.returncode == 0, res.stderr
    assert "nothing was written to Slurm" in res.stdout
    rows = [ln.split() for ln in res.stdout.splitlines() if ln[:1].isdigit()]
    assert [r[1] for r in rows][:2] == [ids["tiny"], ids["short"]]  # sjf order, shown not applied
    assert any(r[6] == "*" for r in rows)  # proposed priorities differ (marked).
    assert _view(c) == before  # ...but nothing changed in Slurm
    assert not (tmp_path / "state.db").exists()
    cycle = next(json.loads(ln) for ln in res.stderr.splitlines() if '"event": "cycle"' in ln)
    assert cycle["outcome"] == "dry_run" and cycle["slurm_calls"] == 5  # reads only: no scontrol update


def test_one_live_cycle_realises_the_plan_order(c: SlurmTestCluster, tmp_path: Path) -> None:
    ids = _queue(c)
    d = _daemon(_cfg(tmp_path, c))
    rep = d.cycle()
    assert rep.outcome == "applied" and rep.changed > 0 and not rep.errors, rep
    assert d.last_plan is not None
    planned = [e.job_id for e in d.last_plan.entries]
    assert planned[:2] == [ids["tiny"], ids["short"]]
    prio = c.sprio()
    assert sorted(planned, key=lambda j: -prio[j][0]) == planned  # Slurm's order is the plan's
    assert len({prio[j][0] for j in planned}) == len(planned)
    order = [ln.strip() for ln in c.squeue("%A", extra=("-t", "PD", "-S", "-p"))]
    assert [j for j in order if j in planned] == planned
    for e in d.last_plan.entries:
        assert prio[e.job_id] == (e.target_priority, e.site_factor)
    assert rep.slurm_calls == 6  # ping, squeue x2, sprio, sinfo + one scontrol for every update (the read
    # a moment ago stands for the ping before writing)
    again = d.cycle()  # nothing changed since: nothing is written
    assert again.changed == 0 and again.slurm_calls == 5


def test_exempt_and_running_jobs_are_untouched(c: SlurmTestCluster, tmp_path: Path) -> None:
    mine = _queue(c)
    theirs = _queue(c, user=TEST_USER)
    running_before = sorted(c.squeue("%A|%Q|%x", extra=("-t", "R")))
    prio_before = c.sprio()
    d = _daemon(_cfg(tmp_path, c, exempt__users=[TEST_USER]))
    rep = d.cycle()
    assert rep.outcome == "applied" and rep.changed > 0
    prio = c.sprio()
    for j in theirs.values():
        assert prio[j] == prio_before[j] and prio[j][1] == 0
    assert d.last_plan is not None
    assert {j for j, why in d.last_plan.skipped if why == f"exempt user {TEST_USER}"} == set(theirs.values())
    assert any(prio[j][1] != 0 for j in mine.values())
    assert sorted(c.squeue("%A|%Q|%x", extra=("-t", "R"))) == running_before
    assert set(d.state.jobs) <= set(mine.values())


@contextlib.contextmanager
def _daemon_process(tmp_path: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The real ``rltune-daemon`` process on ``tmp_path/cfg.toml``, its log lines in ``log``; killed on
    the way out if the test did not stop it."""
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "rltune_daemon.cli.daemon"],
                                env=_env(tmp_path / "cfg.toml"), stdout=subprocess.DEVNULL, stderr=fh)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _events(path: Path) -> list[dict[str, Any]]:
    out = []
    for ln in path.read_text().splitlines():
        if ln.startswith("{"):
            out.append(json.loads(ln))
    return out


def _wait_event(path: Path, pred: Any, timeout: float, proc: subprocess.Popen[bytes], what: str) -> None:
    """Until the daemon logged a matching event (at least ``WAIT_S``: a loaded machine is slow, not
    wrong; a dead daemon fails at once)."""
    deadline = time.monotonic() + max(timeout, WAIT_S)
    while time.monotonic() < deadline:
        if any(pred(e) for e in _events(path)):
            return
        assert proc.poll() is None, f"daemon died: {path.read_text()[-2000:]}"
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}: {path.read_text()[-2000:]}")


def test_daemon_survives_a_stopped_controller_and_sigterm_restores(c: SlurmTestCluster,
                                                                   tmp_path: Path) -> None:
    """The real process: live cycles, slurmctld stopped (cycles skipped, nothing written, errors counted,
    still alive), slurmctld back, then SIGTERM puts every SiteFactor back."""
    ids = _queue(c)
    _cfg(tmp_path, c, interval=5)
    log = tmp_path / "daemon.log"
    with _daemon_process(tmp_path, log) as proc:
        _wait_event(log, lambda e: e.get("event") == "cycle" and e["changed"] > 0, 30, proc, "a live change")
        assert any(v[1] != 0 for k, v in c.sprio().items() if k in ids.values())
        c.cluster.stop_controller()
        try:
            _wait_event(log, lambda e: e.get("event") == "cycle" and "controller_down" in e.get("error", ""),
                        30, proc, "a skipped cycle")
            time.sleep(1.5)
            assert proc.poll() is None
            skipped = [e for e in _events(log) if e.get("event") == "cycle" and e["outcome"] == "skipped"]
            assert skipped and all(e["changed"] == 0 and e["slurm_calls"] == 1 for e in skipped)
        finally:
            c.cluster.start_controller()
        n = len(_events(log))
        _wait_event(log, lambda e: e.get("event") == "cycle" and e["outcome"] == "applied"
                    and _events(log).index(e) >= n, 30, proc, "an applied cycle after the restart")
        state = recorded(tmp_path / "state.json")
        assert set(state["jobs"]) & set(ids.values())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()[-2000:]
    stopped = next(e for e in _events(log) if e.get("event") == "stopped")
    assert stopped["not_restored"] == 0 and stopped["restored_jobs"] > 0
    prio = c.sprio()
    assert all(prio[j][1] == 0 for j in ids.values())
    assert recorded(tmp_path / "state.json")["jobs"] == {}


def test_queue_check_sees_a_submission_and_the_daemon_replans_at_once(c: SlurmTestCluster,
                                                                      tmp_path: Path) -> None:
    """``react``: the one-squeue check equals the last read's queue until a job is submitted; the real
    process then starts a cycle within seconds (trigger ``queue``) instead of waiting its 10 minutes."""
    reader = SlurmBackend(_cfg(tmp_path, c)).reader
    reader.read()
    assert reader.last is not None and reader.watch() == reader.last.queue
    extra = c.submit("--gres=gpu:1", "-t", "3")
    assert (extra, "PENDING") in reader.watch() - reader.last.queue

    _cfg(tmp_path, c, interval=600, react=1, dry_run=True)
    log = tmp_path / "daemon.log"
    with _daemon_process(tmp_path, log) as proc:
        _wait_event(log, lambda e: e.get("event") == "cycle", 30, proc, "the first cycle")
        seen = next(e["jobs_seen"] for e in _events(log) if e.get("event") == "cycle")
        late = c.submit("--gres=gpu:1", "-t", "4")
        _wait_event(log, lambda e: e.get("event") == "cycle" and e["trigger"] == "queue", 30, proc,
                    "a cycle started by the queue check")
        second = [e for e in _events(log) if e.get("event") == "cycle"][1]
        assert second["trigger"] == "queue" and second["jobs_seen"] == seen + 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()[-2000:]
    c.cancel(extra, late)


def test_the_partition_filter_reads_only_those_partitions_and_the_probe_checks_it(c: SlurmTestCluster,
                                                                                  tmp_path: Path) -> None:
    gpu = _queue(c)
    hipri = c.submit("-p", "hipri", "--gres=gpu:1", "-t", "3")
    c.wait_in_sprio(hipri)
    _cfg(tmp_path, c, slurm__partitions=["gpu"])
    res = _cli(tmp_path / "cfg.toml", "--check-config", "--probe")
    assert res.returncode == 0 and "probe OK" in res.stdout, res.stdout + res.stderr
    assert "in partition(s) gpu" in res.stdout
    res = _cli(tmp_path / "cfg.toml", "--once")
    assert res.returncode == 0, res.stderr[-2000:]
    state = recorded(tmp_path / "state.json")["jobs"]
    assert set(state) <= set(gpu.values()) and hipri not in state and c.sprio()[hipri][1] == 0
    assert _cli(tmp_path / "cfg.toml", "--restore").returncode == 0
    _cfg(tmp_path, c, slurm__partitions=["gpux"])
    res = _cli(tmp_path / "cfg.toml", "--check-config", "--probe")
    assert res.returncode == 1 and "partition(s) gpux" in res.stdout and "[slurm] partitions" in res.stdout
