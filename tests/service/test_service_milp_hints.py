"""Placement hints from the real planner (the MILP placer, as shipped) on a real Slurm 22.05.

Scene: every GPU is busy but one on p100-2 and both on k80-2. Two jobs pend: X asks for any one GPU and
is ranked first (shortest), Y asks for a P100. Slurm places X by best fit on p100-2, the last free
P100, and Y is stranded; the MILP looks ahead and puts X on k80-2 so both start. The free nodes are in
an advance reservation for another user while the daemon plans (so neither job starts before it has
written anything); deleting the reservation lets Slurm schedule.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import NullLog, config, recorded

from rltune_daemon.formats.slurm import expand_hostlist
from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.config import DaemonConfig
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.statefile import StateFile
from slurm_fixtures import SlurmTestCluster

pytestmark = pytest.mark.slurm
RESERVATION = "rltune-milp-hold"
ALL = ("k80-1", "k80-2", "m40-1", "p100-1", "p100-2")


@pytest.fixture(scope="module")
def scene(slurm_cluster: SlurmTestCluster) -> Iterator[SlurmTestCluster]:
    c = slurm_cluster
    c.cancel_all()
    c.run("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
    c.strand_one_p100()
    yield c
    c.run("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
    c.cancel_all()


def _hold(c: SlurmTestCluster) -> None:
    c.reserve_free_gpus(RESERVATION)


def _release(c: SlurmTestCluster) -> None:
    c.scontrol("delete", f"ReservationName={RESERVATION}")


def _pair(c: SlurmTestCluster) -> tuple[str, str]:
    x = c.submit("-J", "any-gpu", "--gres=gpu:1", "-t", "2")
    y = c.submit("-J", "needs-p100", "--gres=gpu:p100:1", "-t", "3")
    c.wait_in_sprio(x, y)
    return x, y


def _field(c: SlurmTestCluster, job: str, letter: str) -> str:
    (line,) = c.squeue(f"%A|{letter}", job)
    return line.split("|", 1)[1].strip()


def _exc(c: SlurmTestCluster, job: str) -> str:
    return _field(c, job, "%x")


def _node(c: SlurmTestCluster, job: str) -> str:
    return _field(c, job, "%N")


def _cfg(tmp_path: Path, c: SlurmTestCluster, **kw: object) -> DaemonConfig:
    return config(tmp_path, base_policy="sjf", slurm__conf=c.conf, planner__hint_cycles=2, **kw)


def _daemon(cfg: DaemonConfig) -> Daemon:
    return Daemon(cfg, SlurmBackend(cfg), state_file=StateFile(cfg.resolved_state_file()), log=NullLog(),
                  metrics=Metrics())


@pytest.fixture
def c(scene: SlurmTestCluster) -> Iterator[SlurmTestCluster]:
    yield scene
    scene.run("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
    scene.cancel_pending()
    for job in [ln.strip() for ln in scene.squeue("%A|%j", extra=("-t", "R")) if "|any-gpu" in ln
                or "|needs-p100" in ln]:
        scene.cancel(job.split("|")[0])
    scene.wait_for(lambda: not [ln for ln in scene.squeue("%j", extra=("-t", "R,CG"))
                                if ln.strip() in ("any-gpu", "needs-p100")], what="the pair gone")


def test_slurm_alone_strands_the_typed_job(c: SlurmTestCluster) -> None:
    """The counterfactual: without the daemon, best fit takes the last P100 for the any-GPU job."""
    _hold(c)
    x, y = _pair(c)
    _release(c)
    c.wait_state(x, "RUNNING")
    assert _node(c, x) == "p100-2"
    assert c.state(y) == "PENDING"  # and it cannot start: every P100 is now allocated
    used = {ln.split("|")[0]: ln.split("|")[1] for ln in c.run(
        "sinfo", "-h", "-N", "-O", "NodeList:|,GresUsed:|").stdout.splitlines()}
    assert used["p100-2"].startswith("gpu:p100:4") and used["p100-1"].startswith("gpu:p100:4")


def test_milp_hint_lands_and_slurm_follows_it(c: SlurmTestCluster, tmp_path: Path) -> None:
    _hold(c)
    x, y = _pair(c)
    d = _daemon(_cfg(tmp_path, c))
    rep = d.cycle()
    assert rep.outcome == "applied" and rep.hints_set == 2 and not rep.errors, rep
    assert d.last_plan is not None
    placed = {e.job_id: e.placement.nodes for e in d.last_plan.entries}
    assert placed == {x: ("k80-2",), y: ("p100-2",)}
    assert set(expand_hostlist(_exc(c, x))) == set(ALL) - {"k80-2"}  # every node but the hinted one
    assert set(expand_hostlist(_exc(c, y))) == set(ALL) - {"p100-2"}
    state = recorded(tmp_path / "state.json")
    assert state["jobs"][x]["hint_nodes"] == ["k80-2"] and "exc_nodes" in state["jobs"][x]["fields"]
    _release(c)
    c.wait_state(x, "RUNNING")
    c.wait_state(y, "RUNNING")
    assert (_node(c, x), _node(c, y)) == ("k80-2", "p100-2")  # both start: Slurm followed the hints
    rep = d.cycle()
    assert rep.outcome == "applied" and not rep.errors
    assert d.state.jobs[x].started and d.state.jobs[y].started  # running: the records stay
    c.cancel(x, y)
    c.wait_for(lambda: x not in {ln.strip() for ln in c.squeue("%A", extra=("-t", "R,CG"))}, what="x ended")
    c.wait_for(lambda: y not in {ln.strip() for ln in c.squeue("%A", extra=("-t", "R,CG"))}, what="y ended")
    rep = d.cycle()
    assert rep.forgotten == 2 and d.state.jobs == {}  # Slurm confirmed both ended


def test_a_hint_expires_after_hint_cycles_and_never_returns(c: SlurmTestCluster, tmp_path: Path) -> None:
    """A hint lives ``hint_cycles`` (2) cycles in all, then the user's own list is back for good.

    The hold keeps the hinted node reserved, so once Slurm looks at the hinted job again (at once on a
    busy machine, later on an idle one) it says the job waits for ``ReqNodeNotAvail, May be reserved``:
    the daemon then takes the hint off at the next cycle, since the job cannot start where it points, and
    may hint it again when Slurm says ``Resources``; those cycles count towards the same two."""
    _hold(c)  # kept: the hinted job cannot start, so its hint must go away on its own
    x, _ = _pair(c)
    d = _daemon(_cfg(tmp_path, c))
    seen = []
    for _ in range(10):
        rep = d.cycle()
        assert rep.outcome == "applied" and not rep.errors, rep
        seen.append((rep.hints_set, rep.hints_expired, _exc(c, x)))
        if d.state.jobs[x].hint_done:
            break
    assert seen[0][0] >= 1 and seen[0][2] != ""  # cycle 1: hinted (every node but k80-2 excluded)
    assert d.state.jobs[x].hint_done and seen[-1][1] >= 1 and seen[-1][2] == "", seen  # expired
    hinted = [exc for _, _, exc in seen if exc]
    assert len(hinted) == 2 and set(hinted) == {seen[0][2]}, seen  # hint_cycles cycles, one hint
    for _ in range(2):
        rep = d.cycle()
        assert rep.outcome == "applied" and rep.hints_set == 0 and _exc(c, x) == ""  # never hinted again
    rep_restore = d.restore()
    assert rep_restore.ok and c.sprio()[x][1] == 0 and d.state.jobs == {}


def _cli(cfg_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
    env["RLTUNE_CONFIG"] = str(cfg_path)
    return subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_restore_and_sigterm_clear_a_live_hint(c: SlurmTestCluster, tmp_path: Path) -> None:
    _hold(c)
    x, y = _pair(c)
    _cfg(tmp_path, c)
    res = _cli(tmp_path / "cfg.toml", "--once")
    assert res.returncode == 0, res.stderr[-2000:]
    assert _exc(c, x) != "" and c.sprio()[y][1] != 0
    res = _cli(tmp_path / "cfg.toml", "--restore")
    assert res.returncode == 0, res.stderr[-2000:]
    assert (_exc(c, x), _exc(c, y)) == ("", "") and c.sprio()[x][1] == c.sprio()[y][1] == 0
    assert "nothing to restore" in _cli(tmp_path / "cfg.toml", "--restore").stdout
    # the long-running process: a hint set, then SIGTERM puts everything back
    log = tmp_path / "daemon.log"
    with open(log, "wb") as fh:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
        proc = subprocess.Popen([sys.executable, "-m", "rltune_daemon.cli.daemon"],
                                env=env | {"RLTUNE_CONFIG": str(tmp_path / "cfg.toml")}, stderr=fh,
                                stdout=subprocess.DEVNULL)
    try:
        c.wait_for(lambda: _exc(c, x) != "", what="the hint written by the running daemon")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (_exc(c, x), _exc(c, y)) == ("", "") and c.sprio()[x][1] == c.sprio()[y][1] == 0
    assert recorded(tmp_path / "state.json")["jobs"] == {}
