"""Placement hints on a real Slurm: the hint lands on the nodes the Plan chose, steers the job there,
is cleared when stale, and ``rltune-daemon --restore`` (idempotent) puts node lists and SiteFactors back.

Scenario: p100-1 and both K80 nodes are full; p100-2 and m40-1 are idle but in an advance reservation for
another user. Slurm cannot start a root job there, yet the planner (which does not model reservations)
believes it can: exactly the case a hint must not make worse. The placer here picks the node with the
most free GPUs (p100-2) where Slurm's best fit would take m40-1, so the plan carries a hint.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from service_helpers import NullLog, config

from rltune_daemon.domain.arrays import I64
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.placement.allocate import FreeView, allocate, take
from rltune_daemon.placement.context import PlacementContext, PlacementResult
from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.statefile import StateFile
from slurm_fixtures import TEST_USER, SlurmTestCluster

pytestmark = pytest.mark.slurm
RESERVATION = "rltune-test-hold"


def most_free_placer(ctx: PlacementContext, rows: I64) -> PlacementResult:
    """Each job on the single node with the most free GPUs (greedy would best-fit instead)."""
    cl = ctx.cluster
    free = FreeView(cl.gpus_free.copy(), cl.cpus_free.copy(), cl.mem_free.copy())
    out = {}
    for r in rows:
        row = int(r)
        mask = np.zeros(cl.n_nodes, dtype=np.bool_)
        mask[int(np.argmax(np.where(cl.usable, free.gpus, -1)))] = True
        alloc = allocate(cl, ctx.elig, ctx.shapes, row, int(ctx.table.gpus[row]), PlacementKind.SPREAD, free,
                         mask)
        if alloc is not None:
            take(free, alloc)
            out[row] = alloc
    return PlacementResult(out, "test")


def _reserve(c: SlurmTestCluster) -> None:
    """Idle p100-2 and m40-1, reserved for another user (a fresh reservation each time)."""
    c.run("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
    c.scontrol("create", "reservation", f"ReservationName={RESERVATION}", f"Users={TEST_USER}",
               "Nodes=p100-2,m40-1", "StartTime=now", "Duration=60", "Flags=IGNORE_JOBS")


@pytest.fixture(scope="module")
def reserved(slurm_cluster: SlurmTestCluster) -> Iterator[SlurmTestCluster]:
    c = slurm_cluster
    c.cancel_all()
    _reserve(c)
    for node, gres in (("p100-1", "gpu:p100:4"), ("k80-1", "gpu:k80:2"), ("k80-2", "gpu:k80:2")):
        c.wait_state(c.submit("-w", node, f"--gres={gres}", "-t", "60"), "RUNNING")
    yield c
    c.run("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
    c.cancel_all()


def _daemon(tmp_path: Path, c: SlurmTestCluster) -> Daemon:
    cfg = config(tmp_path, base_policy="multifactor", slurm__conf=c.conf, planner__hint_cycles=2,
                 planner__placer="greedy", slurm__max_calls_per_cycle=40)
    d = Daemon(cfg, SlurmBackend(cfg), state_file=StateFile(cfg.resolved_state_file()), log=NullLog(),
               metrics=Metrics())
    d.placer.inner = most_free_placer
    return d


def _restore_cli(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "rltune_daemon.cli.daemon", "--config", str(tmp_path / "cfg.toml"),
            "--restore"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def _exc(c: SlurmTestCluster, job: str) -> str:
    """The job's ExcNodeList as squeue prints it ("" when none)."""
    (line,) = c.squeue("%A|%x", job)
    return line.split("|", 1)[1].strip()


def test_hint_lands_is_cleared_when_stale_and_steers(reserved: SlurmTestCluster, tmp_path: Path) -> None:
    c = reserved
    _reserve(c)
    j = c.submit("--gres=gpu:1", "-t", "10")
    c.wait_in_sprio(j)
    d = _daemon(tmp_path, c)
    rep = d.cycle()
    assert d.last_plan is not None and d.last_plan.entries[0].placement.nodes == ("p100-2",)
    assert rep.hints_set == 1 and rep.priority_updates == 0  # multifactor: Slurm's order, no SiteFactor
    assert _exc(c, j) == "k80-[1-2],m40-1,p100-1"  # every node but the one the plan chose
    assert c.state(j) == "PENDING"  # reserved: the planner was wrong, the hint must not linger
    assert d.cycle().hints_expired == 0  # second cycle: still within hint_cycles
    rep = d.cycle()
    assert rep.hints_expired == 1 and _exc(c, j) == ""  # stale: the user's (empty) ExcNodeList is back
    assert d.cycle().hints_set == 0 and _exc(c, j) == ""  # and never hinted again
    assert d.state.jobs[j].hint_done
    c.cancel(j)

    k = c.submit("--gres=gpu:1", "-t", "10")
    c.wait_in_sprio(k)
    (tmp_path / "2").mkdir()
    d = _daemon(tmp_path / "2", c)
    assert d.cycle().hints_set == 1 and _exc(c, k) == "k80-[1-2],m40-1,p100-1"
    c.scontrol("delete", f"ReservationName={RESERVATION}")  # both idle nodes free up at once
    c.wait_state(k, "RUNNING")
    assert c.squeue("%N", k)[0].strip() == "p100-2"  # where the plan put it, not on the best-fit m40-1
    c.cancel(k)


def test_restore_cli_puts_hints_back_and_is_idempotent(reserved: SlurmTestCluster, tmp_path: Path) -> None:
    c = reserved
    _reserve(c)
    user_exc = c.submit("--gres=gpu:1", "-t", "10", "--exclude=k80-2")
    c.wait_in_sprio(user_exc)
    d = _daemon(tmp_path, c)
    assert d.cycle().hints_set == 1
    assert _exc(c, user_exc) == "k80-[1-2],m40-1,p100-1"
    res = _restore_cli(tmp_path)
    assert res.returncode == 0, res.stderr
    assert "restored 1 field(s) on 1 job(s)" in res.stdout
    assert _exc(c, user_exc) == "k80-2"  # the user's own exclusion, exactly
    again = _restore_cli(tmp_path)
    assert again.returncode == 0 and "nothing to restore" in again.stdout
    assert _exc(c, user_exc) == "k80-2"
    c.cancel(user_exc)
