"""Offline daemon mode is the daemon: ``rltune evaluate``'s daemon mode and ``rltune-daemon --backend
sim`` run one planner -> applier -> writer path on one tick grid, so the same window and settings give
the same start time for every job."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from service_helpers import NullLog, config, out_buffer

from rltune_daemon.evaluate.runner import EvalConfig, make_controller
from rltune_daemon.service.backends import SimBackend
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.simdaemon import DaemonModeController
from rltune_daemon.service.statefile import StateFile
from rltune_daemon.sim.engine import Simulator


def _daemon_run(tmp_path: Path, base: str, jobs: int, **overrides: object) -> tuple[Daemon, SimBackend]:
    cfg = config(tmp_path, base_policy=base, backend="sim", sim__workload="testbed", sim__jobs=jobs,
                 sim__speedup=0, **overrides)
    backend = SimBackend(cfg)
    daemon = Daemon(cfg, backend, state_file=StateFile(None), log=NullLog(), out=out_buffer(), table=False)
    assert daemon.run() == 0 and backend.slurm.done()
    return daemon, backend


@pytest.mark.parametrize(("base", "react", "placement"), [
    ("sjf", 5.0, True),  # SiteFactors and the MILP's placements, queue checks every 5 s
    ("multifactor", 0.0, True),  # Slurm's own order (no SiteFactor written), placements only, no checks
    ("wfp3", 5.0, False),  # priorities only
])
def test_evaluate_daemon_mode_and_backend_sim_start_every_job_at_the_same_time(
        tmp_path: Path, base: str, react: float, placement: bool) -> None:
    daemon, backend = _daemon_run(tmp_path, base, 300, react=react, planner__placement=placement)
    live = backend.slurm.sim
    cfg = EvalConfig(trace="testbed", policies=(f"daemon:{base}",), interval=daemon.cfg.interval, react=react,
                     milp=placement)
    ctl = make_controller(f"daemon:{base}", backend.workload, cfg)
    assert isinstance(ctl, DaemonModeController) and ctl.cfg == daemon.planner_cfg
    offline = Simulator(backend.workload, ctl, cfg.sim_config()).run()
    assert np.isfinite(live.start).all() and live.stats["started"] == 300
    np.testing.assert_array_equal(offline.start, live.start)
    np.testing.assert_array_equal(offline.end, live.end)
    # both steered the cluster: the comparison is not between two runs that wrote nothing
    assert ctl.plans > 0 and ctl.applier is not daemon.applier
    if base != "multifactor":
        assert daemon.metrics.priority_updates._value.get() > 0


def test_a_daemon_that_writes_nothing_changes_nothing(tmp_path: Path) -> None:
    """No SiteFactor and no hint written: every job starts when it does under Slurm's multifactor alone,
    both in evaluate's daemon mode and through ``rltune-daemon --backend sim`` with its default
    configuration, although the daemon cycled thousands of times (a queue check every 5 s)."""
    daemon, backend = _daemon_run(tmp_path, "multifactor", 400)
    alone = Simulator(backend.workload, make_controller("multifactor", backend.workload,
                                                        EvalConfig(trace="testbed", policies=())))
    ref = alone.run()
    live = backend.slurm.sim
    assert daemon.metrics.priority_updates._value.get() == 0 and live.stats["ticks"] > 1000
    np.testing.assert_array_equal(live.start, ref.start)
    cfg = EvalConfig(trace="testbed", policies=("daemon:multifactor",), milp=False)
    ctl = make_controller("daemon:multifactor", backend.workload, cfg)
    offline = Simulator(backend.workload, ctl, cfg.sim_config()).run()
    assert isinstance(ctl, DaemonModeController) and ctl.cycles > 1000
    np.testing.assert_array_equal(offline.start, ref.start)
    # a daemon that writes does move jobs: the comparison above can fail
    sjf_ctl = make_controller("daemon:sjf", backend.workload, cfg)
    sjf = Simulator(backend.workload, sjf_ctl, cfg.sim_config()).run()
    assert (sjf.start != ref.start).sum() > 10
