"""Offline daemon mode and ``rltune-daemon --backend sim`` both run ``core.cycle.run_cycle`` (one
function, so they cannot drift apart): a daemon that writes nothing leaves Slurm's schedule as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from service_helpers import NullLog, config, out_buffer

from rltune_daemon.cli.daemon import make_backend
from rltune_daemon.evaluate.runner import EvalConfig, make_controller
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.statefile import StateFile
from rltune_daemon.sim.backend import SimBackend
from rltune_daemon.sim.daemon import DaemonModeController
from rltune_daemon.sim.engine import Simulator


def _daemon_run(tmp_path: Path, base: str, jobs: int, **overrides: object) -> tuple[Daemon, SimBackend]:
    cfg = config(tmp_path, base_policy=base, backend="sim", sim__workload="testbed", sim__jobs=jobs,
                 sim__speedup=0, **overrides)
    backend = make_backend(cfg)
    daemon = Daemon(cfg, backend, state_file=StateFile(None), log=NullLog(), out=out_buffer(), table=False)
    assert daemon.run() == 0 and backend.slurm.done()
    return daemon, backend


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
