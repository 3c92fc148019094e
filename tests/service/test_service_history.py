"""A history-based base policy (QSSF) in the daemon: it learns finished runs from the backend (sacct on
a cluster, the simulator's finished jobs with ``--backend sim``), orders a real Slurm queue by that
history, and without accounting says so once and keeps ordering by requested times."""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from service_helpers import NullLog, config

from rltune_daemon.cli.daemon import make_backend, sim_backend
from rltune_daemon.domain.arrays import JobTable
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.policies.qssf import QSSF
from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.config import DaemonConfig
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.statefile import StateFile
from rltune_daemon.sim.backend import SimBackend
from rltune_daemon.slurm.errors import SlurmCommandError
from rltune_daemon.slurm.history import SacctHistory
from rltune_daemon.traces import load_workload
from slurm_fixtures import TEST_USER, SlurmTestCluster


def _runs(rows: list[tuple[str, str, int, float, float]]) -> FinishedRuns:
    ids, users, gpus, runtime, end = zip(*rows, strict=True)
    return FinishedRuns(ids, users, np.array(gpus, dtype=np.int64), np.array(runtime), np.array(end))


def test_qssf_learns_runs_in_end_order() -> None:
    """The prediction is the mean of the user's last ``window`` runs by END time, whatever order the
    source lists them in (sacct lists by job id)."""
    q = QSSF(window=2)
    q.learn_runs(_runs([("3", "ann", 1, 30.0, 300.0), ("1", "ann", 1, 10.0, 100.0),
                        ("2", "ann", 1, 20.0, 200.0), ("4", "bob", 2, 99.0, 50.0)]))
    assert q.runs_learned == 4
    w = load_workload("testbed")
    ann = JobTable.from_jobs([dataclasses.replace(w.jobs[0], user="ann", gpus=1)], w.cluster)
    assert q.predict(ann, 0) == 25.0  # runs 2 and 3, not 1


def test_fit_history_is_learn_runs_of_the_table() -> None:
    w = load_workload("testbed")
    table = JobTable.from_jobs(w.jobs[:400], w.cluster)
    a, b = QSSF(), QSSF()
    a.fit_history(table)
    b.learn_runs(FinishedRuns.from_table(table))
    rest = JobTable.from_jobs(w.jobs[400:600], w.cluster)
    assert [a.predict(rest, r) for r in range(200)] == [b.predict(rest, r) for r in range(200)]
    assert a.runs_learned == 400


def test_qssf_forgets_predictions_of_jobs_that_left_the_queue() -> None:
    """A daemon sees millions of job ids: the cache keeps the pending ones, not every id ever seen."""
    w = load_workload("testbed")
    jobs = [dataclasses.replace(j, id=f"{k}.{j.id}") for k in range(5) for j in w.jobs]
    table = JobTable.from_jobs(jobs[:5000], w.cluster)
    q = QSSF()
    for lo in range(0, 5000, 10):
        q.scores(QueueView(table, np.arange(lo, lo + 10, dtype=np.int64), 0.0))
    assert len(q._pred) <= 4 * 10 + 4096 + 10


def _daemon(cfg: DaemonConfig, backend: Any, out: io.StringIO | None = None) -> Daemon:
    return Daemon(cfg, backend, state_file=StateFile(cfg.resolved_state_file()), log=NullLog(),
                  metrics=Metrics(), out=out)


def test_sim_daemon_feeds_qssf_every_finished_job(tmp_path: Path) -> None:
    cfg = config(tmp_path, base_policy="qssf", backend="sim", sim__jobs=120, sim__speedup=0)
    backend = make_backend(cfg)
    d = _daemon(cfg, backend)
    for _ in range(40):
        d.cycle()
        backend.tick(cfg.interval)
    finished = int(np.count_nonzero(~np.isnan(backend.slurm.sim.end)))
    learned = d.choice.policy.runs_learned
    assert 0 < learned <= finished  # what had finished by the last cycle
    assert d.metrics.registry.get_sample_value("rltune_history_runs") == learned
    d.cycle()
    assert d.choice.policy.runs_learned == finished  # every finished job exactly once


def _model_dir(tmp_path: Path) -> Path:
    """An untrained model directory as training writes it."""
    import torch

    from rltune_daemon.features import ACTOR_DIM
    from rltune_daemon.train.args import TrainArgs
    from rltune_daemon.train.export import export_model
    from rltune_daemon.train.network import Actor

    torch.manual_seed(0)
    out = tmp_path / "m"
    out.mkdir()
    export_model(Actor(ACTOR_DIM), TrainArgs(trace="testbed", out=out, heldout_windows=0), 0.0, [], {})
    return out


def test_a_model_with_the_history_input_is_fed_like_qssf(tmp_path: Path) -> None:
    """A model (its ``hist_time`` input) learns every finished run exactly once."""
    out = _model_dir(tmp_path)
    (tmp_path / "c").mkdir()
    cfg = config(tmp_path / "c", model=str(out), backend="sim", sim__jobs=120, sim__speedup=0)
    backend = make_backend(cfg)
    d = _daemon(cfg, backend)
    assert not d.choice.fallback, d.choice.fallback
    for _ in range(30):
        d.cycle()
        backend.tick(cfg.interval)
    d.cycle()
    finished = int(np.count_nonzero(~np.isnan(backend.slurm.sim.end)))
    assert d.choice.policy.runs_learned == finished > 0


class _NoAccounting(SimBackend):
    """The sim backend, with a history that fails like sacct on a cluster without slurmdbd (the only fake
    part: the failure; the real-cluster version is test_plain_cluster_dry_run_says_qssf_has_no_history)."""

    name = "slurm"

    def finished_runs(self, rewind: bool = False) -> FinishedRuns:
        raise SlurmCommandError(["sacct"], 1, "sacct: error: Slurm accounting storage is disabled")


def _dry_runs_without_accounting(tmp_path: Path, cycles: int, **kw: Any) -> tuple[Daemon, str]:
    """``cycles`` dry-run cycles of a simulated cluster whose sacct fails; each must still be a dry run.
    Returns the daemon and what it printed."""
    cfg = config(tmp_path, backend="sim", sim__jobs=120, sim__speedup=0, dry_run=True, **kw)
    backend = sim_backend(cfg, kind=_NoAccounting)
    backend.slurm.skip(3600.0)
    out = io.StringIO()
    d = _daemon(cfg, backend, out)
    assert [d.cycle().outcome for _ in range(cycles)] == ["dry_run"] * cycles
    return d, out.getvalue()


def test_no_accounting_is_said_once_and_cycles_go_on(tmp_path: Path) -> None:
    d, text = _dry_runs_without_accounting(tmp_path, 3, base_policy="qssf")
    warnings = [e for e in d.log.events if e[1] == "history_unavailable"]
    assert len(warnings) == 1 and "accounting storage is disabled" in warnings[0][2]["error"]
    assert d.metrics.registry.get_sample_value("rltune_errors_total", {"kind": "history"}) == 3
    assert "!!! qssf has no run history" in text


def test_no_accounting_for_a_history_model_names_the_model(tmp_path: Path) -> None:
    model = _model_dir(tmp_path)
    _, text = _dry_runs_without_accounting(tmp_path, 1, model=str(model))
    assert f"!!! {model} has no run history" in text
    assert "hist_time input is the requested time" in text


# ---- a real Slurm ----------------------------------------------------------------------------------

def _cfg(tmp_path: Path, c: SlurmTestCluster, **kw: Any) -> DaemonConfig:
    tmp_path.mkdir(parents=True, exist_ok=True)
    kw.setdefault("base_policy", "qssf")
    # these queues hold two or three jobs: every job may move (none kept next in line), so the order
    # the history gives shows
    return config(tmp_path, slurm__conf=c.conf, slurm__max_calls_per_cycle=40, planner__next_in_line=0, **kw)


@pytest.mark.slurm
def test_qssf_orders_a_real_queue_by_sacct_history(slurmdbd_cluster: SlurmTestCluster,
                                                   tmp_path: Path) -> None:
    """rltuser's 1-GPU jobs ran ~1 s, root's ~8 s. Pending: root asks 5 min, rltuser 60 min. By requested
    time root goes first; with the history QSSF puts rltuser first, and Slurm's order follows. (Before
    the daemon fed QSSF from sacct, it ordered exactly like requested time.)"""
    c = slurmdbd_cluster
    c.cancel_all()
    done = [c.submit("--gres=gpu:1", "-t", "60", wrap="sleep 1", user=TEST_USER) for _ in range(2)]
    done.append(c.submit("--gres=gpu:1", "-t", "60", wrap="sleep 8"))
    probe = SacctHistory(c.runner(), days=1)
    seen: set[str] = set()

    def recorded() -> bool:
        seen.update(probe.read().ids)
        return set(done) <= seen

    c.wait_for(recorded, 60, "the runs in sacct")
    c.fill_gpus()
    try:
        root = c.submit("--gres=gpu:1", "-t", "5")
        user = c.submit("--gres=gpu:1", "-t", "60", user=TEST_USER)
        c.wait_in_sprio(root, user)
        # by requested time alone (sjf, a dry run: nothing written) root goes first
        blind_cfg = _cfg(tmp_path / "b", c, base_policy="sjf", dry_run=True)
        blind = _daemon(blind_cfg, SlurmBackend(blind_cfg), io.StringIO())
        blind.cycle()
        assert blind.last_plan is not None
        assert [e.job_id for e in blind.last_plan.entries] == [root, user]
        cfg = _cfg(tmp_path / "a", c)
        with_history = _daemon(cfg, SlurmBackend(cfg))
        rep = with_history.cycle()
        assert rep.outcome == "applied" and not rep.errors, rep
        assert with_history.choice.policy.runs_learned >= 3
        assert with_history.last_plan is not None
        assert [e.job_id for e in with_history.last_plan.entries] == [user, root]
        prio = c.sprio()
        assert prio[user][0] > prio[root][0]  # Slurm's order is the history's
    finally:
        c.cancel_all()


@pytest.mark.slurm
def test_plain_cluster_dry_run_says_qssf_has_no_history(c: SlurmTestCluster, tmp_path: Path) -> None:
    """No slurmdbd: the real sacct fails; the dry run says so in its banner and still plans (rc 0)."""
    job = c.submit("--gres=gpu:1", "-t", "5")
    c.wait_in_sprio(job)
    _cfg(tmp_path, c)
    env = {"RLTUNE_CONFIG": str(tmp_path / "cfg.toml"), "PATH": os.environ["PATH"]}  # the Slurm under test
    res = subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", "--dry-run", "--once"],
                         env=env, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert "!!! qssf has no run history" in res.stdout and "accounting" in res.stdout
    assert job in res.stdout and "history_unavailable" in res.stderr


class _FlakyAccounting(SimBackend):
    """sacct fails once, then (as the real backend does for 10 minutes after a failure) is not asked,
    then works: only the read that worked may be called a recovery."""

    name = "slurm"

    asked = 0

    def finished_runs(self, rewind: bool = False) -> FinishedRuns | None:
        self.asked += 1
        if self.asked == 1:
            raise SlurmCommandError(["sacct"], 1, "sacct: error: Slurm accounting storage is disabled")
        if self.asked == 2:
            return None
        return super().finished_runs(rewind=True)


def test_history_is_said_to_recover_only_when_a_read_worked(tmp_path: Path) -> None:
    cfg = config(tmp_path, backend="sim", sim__jobs=120, sim__speedup=0, dry_run=True, base_policy="qssf")
    backend = sim_backend(cfg, kind=_FlakyAccounting)
    backend.slurm.skip(3600.0)
    d = _daemon(cfg, backend, io.StringIO())
    events = []
    for _ in range(3):
        d.cycle()
        events.append([e[1] for e in d.log.events if e[1] in ("history_unavailable", "history")])
    assert events[0] == ["history_unavailable"]
    assert events[1] == ["history_unavailable"]  # nothing was read: no "history" line
    assert events[2] == ["history_unavailable", "history"] and d.choice.policy.runs_learned > 0
