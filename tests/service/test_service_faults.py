"""Faults injected into a real local Slurm 22.05 cycle (wrappers around the real clients, faultbin.py):
garbage, cut, emptied, failing and hanging reads; failing, hanging, half-applied writes; slurmctld
stopped in the middle of a write; the daemon SIGKILLed before its read, between read and write, in
the middle of a batch and between batches.

After every fault: what Slurm shows for each job is what the state file says (our value, or while a
write is unconfirmed the value before it), no record was lost, and a restore (or SIGTERM of a daemon
started again) brings every job back to its original SiteFactor and node list.

Scene: every GPU busy but one on p100-2 and both on k80-2, which are reserved for another user, so
that the plan carries node hints (the MILP places the any-GPU job on k80-2) while nothing starts.
"""

from __future__ import annotations

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
from faultbin import FaultBin
from service_helpers import NullLog, config, recorded

from rltune_daemon.formats.slurm import expand_hostlist
from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.config import DaemonConfig
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.statefile import StateFile
from rltune_daemon.slurm.reader import SETTLE_S
from slurm_fixtures import TEST_USER, SlurmTestCluster

pytestmark = pytest.mark.slurm
RESERVATION = "rltune-fault-hold"
STRANDED = {"p100-1": 4, "p100-2": 3, "k80-1": 2, "k80-2": 0, "m40-1": 1}  # strand_one_p100


@pytest.fixture(scope="module")
def scene(slurm_cluster: SlurmTestCluster, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[SlurmTestCluster, FaultBin, list[str]]]:
    c = slurm_cluster
    c.cancel_all()
    c.strand_one_p100()
    c.reserve_free_gpus(RESERVATION, minutes=120)
    jobs = [c.submit("--gres=gpu:1", "-t", "2"), c.submit("--gres=gpu:p100:1", "-t", "3")]
    for k, (gres, minutes) in enumerate((("gpu:k80:2", 40), ("gpu:2", 20), ("gpu:p100:4", 90),
                                         ("gpu:1", 15), ("gpu:m40:1", 30), ("gpu:k80:1", 25))):
        jobs.append(c.submit(f"--gres={gres}", "-t", str(minutes), user=TEST_USER if k % 2 else None))
    c.wait_in_sprio(*jobs)
    time.sleep(SETTLE_S)  # past the age from which the reader expects every waiting job in sprio
    used = {n.name: n.gpus_alloc for n in c.reader().read().nodes}
    started = [j for j in jobs if c.state(j) != "PENDING"]
    if used != STRANDED or started:  # the scene's premise, or every test below fails for another reason
        raise AssertionError(f"scene not as built: GPUs in use {used}, started {started}\n"
                             + c.run("sinfo", "-N", "-O", "NodeList:10,StateLong:16,GresUsed:30").stdout
                             + c.run("squeue", "-o", "%A %T %r %b %N").stdout)
    faults = FaultBin(tmp_path_factory.mktemp("faultbin"), c.cluster.state_dir / "run" / "slurmctld.pid")
    yield c, faults, jobs
    faults.disarm()
    c.cluster.start_controller()
    c.run("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
    c.cancel_all()


def _cfg(tmp_path: Path, c: SlurmTestCluster, faults: FaultBin, **kw: Any) -> DaemonConfig:
    kw.setdefault("slurm__timeout", 2)
    # every job reordered (none kept next in line) so that a cycle writes priorities and node hints for
    # the faults to land on
    return config(tmp_path, base_policy="sjf", slurm__conf=c.conf, slurm__bin_dir=str(faults.path),
                  slurm__ping_timeout=2, slurm__max_calls_per_cycle=40, planner__hint_cycles=50,
                  planner__reorder="queue", planner__next_in_line=0, **kw)


def _daemon(cfg: DaemonConfig) -> Daemon:
    return Daemon(cfg, SlurmBackend(cfg), state_file=StateFile(cfg.resolved_state_file()), log=NullLog(),
                  metrics=Metrics())


def _view(c: SlurmTestCluster, jobs: list[str]) -> dict[str, tuple[int, frozenset[str]]]:
    """(SiteFactor, ExcNodeList) of each job as Slurm shows them."""
    prio = c.sprio()
    exc = dict(ln.split("|", 1) for ln in c.squeue("%A|%x", *jobs))
    return {j: (prio[j][1], frozenset(expand_hostlist(exc[j].strip()))) for j in jobs}


def _state(tmp_path: Path) -> dict[str, Any]:
    return recorded(tmp_path / "state.json")["jobs"]  # {} when there is no state file


def _consistent(c: SlurmTestCluster, jobs: list[str], tmp_path: Path) -> None:
    """Slurm shows, for every job, what the state file says: the value the daemon last set (or, while
    that write is unconfirmed, the value before it); jobs it does not record have their originals."""
    state = _state(tmp_path)
    for job, (site, exc) in _view(c, jobs).items():
        fields = state.get(job, {}).get("fields", {})
        for name, seen in (("site_factor", site), ("exc_nodes", exc)):
            fc = fields.get(name)
            if fc is None:
                assert seen in (0, frozenset()), f"job {job}: {name} {seen} but no record of it"
                continue
            values = [fc["value"]] + ([] if fc["confirmed"] else [fc["previous"]])
            allowed = {frozenset(v) if name == "exc_nodes" else v for v in values}
            assert seen in allowed, f"job {job}: {name} is {seen}, state file allows {allowed}"


def _original(c: SlurmTestCluster, jobs: list[str]) -> None:
    assert _view(c, jobs) == {j: (0, frozenset()) for j in jobs}


READ_FAULTS = [(k, m) for k in ("squeue-jobs", "sprio", "sinfo")
               for m in ("garbage", "truncate", "drop", "empty", "fail", "slow")] + [
    ("squeue-tres", m) for m in ("garbage", "truncate", "drop", "empty", "fail", "slow")] + [
    ("ping", "fail"), ("ping", "slow")]


@pytest.mark.parametrize(("key", "mode"), READ_FAULTS)
def test_a_faulty_read_writes_nothing_and_loses_no_record(
        scene: tuple[SlurmTestCluster, FaultBin, list[str]], tmp_path: Path, key: str, mode: str) -> None:
    c, faults, jobs = scene
    d = _daemon(_cfg(tmp_path, c, faults))
    rep = d.cycle()
    assert rep.outcome == "applied" and rep.changed > 0 and rep.hints_set >= 1 and not rep.errors, rep
    before, recorded = _view(c, jobs), set(_state(tmp_path))
    faults.arm(key, mode)
    try:
        for _ in range(4):  # more reads than the daemon once needed to forget a job (3)
            rep = d.cycle()
            assert rep.outcome == "skipped" and rep.errors and rep.changed == 0, rep
        assert faults.hits(key) >= 4
    finally:
        faults.disarm()
    assert _view(c, jobs) == before and set(_state(tmp_path)) == recorded
    _consistent(c, jobs, tmp_path)
    out = d.restore()
    assert out.ok, out
    _original(c, jobs)
    assert _state(tmp_path) == {}


def test_a_suspect_read_names_its_reason_in_the_cycle_line_and_the_metric(
        scene: tuple[SlurmTestCluster, FaultBin, list[str]], tmp_path: Path) -> None:
    c, faults, _ = scene
    d = _daemon(_cfg(tmp_path, c, faults))
    faults.arm("squeue-jobs", "empty")
    try:
        rep = d.cycle()
    finally:
        faults.disarm()
    assert rep.suspect == "sprio_mismatch" and "sprio lists" in rep.errors[0]
    suspect = d.metrics.registry.get_sample_value("rltune_suspect_reads_total", {"reason": "sprio_mismatch"})
    assert suspect == 1
    log = d.log.named("cycle")[-1]  # type: ignore[attr-defined]
    assert log["suspect"] == "sprio_mismatch" and log["outcome"] == "skipped"
    assert _state(tmp_path) == {}


@pytest.mark.parametrize("mode", ["fail", "slow", "partial", "stop-ctld"])
def test_a_faulty_write_is_settled_by_the_next_read(
        scene: tuple[SlurmTestCluster, FaultBin, list[str]], tmp_path: Path, mode: str) -> None:
    c, faults, jobs = scene
    d = _daemon(_cfg(tmp_path, c, faults))
    faults.arm("update", mode)
    try:
        rep = d.cycle()
        hits = faults.hits("update")
    finally:
        faults.disarm()
        c.cluster.start_controller()
    assert hits == 1 and rep.outcome in ("applied", "skipped"), rep
    if mode != "partial":  # rc 0 with half the lines: Slurm says nothing, the next read finds out
        _consistent(c, jobs, tmp_path)
    rep = d.cycle()
    assert rep.outcome == "applied" and not rep.errors, rep
    _consistent(c, jobs, tmp_path)
    out = d.restore()
    assert out.ok, out
    _original(c, jobs)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
    return env | {"RLTUNE_CONFIG": str(tmp_path / "cfg.toml")}


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", *args], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300, check=False)


def _restart_then_sigterm(tmp_path: Path) -> list[dict[str, Any]]:
    """Start the daemon again, let one cycle finish, SIGTERM it; its log events."""
    log = tmp_path / "daemon.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "rltune_daemon.cli.daemon"], env=_env(tmp_path),
                                stdout=subprocess.DEVNULL, stderr=fh)
    try:
        SlurmTestCluster.wait_for(lambda: '"event": "cycle"' in log.read_text() or proc.poll() is not None,
                                  what="a cycle of the restarted daemon")
        assert proc.poll() is None, log.read_text()[-2000:]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    return [json.loads(ln) for ln in log.read_text().splitlines() if ln.startswith("{")]


@pytest.mark.parametrize(("key", "mode"), [
    ("ping", "kill"),  # before the read
    ("squeue-jobs", "kill"),  # during the read
    ("update", "kill"),  # between read and write: intents saved, nothing sent
    ("update", "kill-mid"),  # half of a batch applied
    ("update", "kill-second"),  # one batch applied, killed before the next
])
def test_sigkill_at_each_stage_leaves_slurm_as_the_state_file_says_and_a_restart_restores(
        scene: tuple[SlurmTestCluster, FaultBin, list[str]], tmp_path: Path, key: str, mode: str) -> None:
    c, faults, jobs = scene
    _cfg(tmp_path, c, faults, slurm__write_batch=2)
    if key in ("ping", "squeue-jobs"):  # something to lose first: one full live cycle
        res = _cli(tmp_path, "--once")
        assert res.returncode == 0, res.stderr[-2000:]
        assert _state(tmp_path)
    before = _state(tmp_path)
    faults.arm(key, mode)
    try:
        res = _cli(tmp_path, "--once")
    finally:
        faults.disarm()
    assert res.returncode == -signal.SIGKILL, res.stderr[-2000:]
    assert set(_state(tmp_path)) >= set(before)  # no record lost
    if key == "update":
        assert _state(tmp_path) and any(not f["confirmed"] for j in _state(tmp_path).values()
                                        for f in j["fields"].values())  # intents were saved first
    _consistent(c, jobs, tmp_path)
    events = _restart_then_sigterm(tmp_path)
    stopped = next(e for e in events if e.get("event") == "stopped")
    assert stopped["not_restored"] == 0 and not stopped["error"], stopped
    _original(c, jobs)
    assert _state(tmp_path) == {}
    assert "nothing to restore" in _cli(tmp_path, "--restore").stdout
