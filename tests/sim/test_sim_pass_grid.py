"""Scheduling passes on a grid (``SimConfig.pass_period``): what a replay uses to follow Slurm's
backfill thread, which starts jobs only when it wakes up (every bf_interval)."""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.domain.workload import Workload
from rltune_daemon.evaluate.windows import heldout_windows
from rltune_daemon.policies.multifactor import Multifactor
from rltune_daemon.sim.config import SimConfig
from rltune_daemon.sim.engine import simulate
from rltune_daemon.traces import load_workload

PERIOD = 120.0


def _window() -> Workload:
    wl = load_workload("testbed", estimates="user", seed=0, jobs=600)
    return heldout_windows(wl, 1, 48, 0)[1][0]


def _cfg(period: float) -> SimConfig:
    return SimConfig(effects=EffectsConfig.pure(), bf_reservations=500, pass_period=period)


def test_every_start_waits_for_the_next_grid_point() -> None:
    win = _window()
    free = simulate(win, Multifactor(), _cfg(0.0))
    grid = simulate(win, Multifactor(), _cfg(PERIOD))
    assert not np.isnan(grid.start).any() and not np.isnan(free.start).any()
    phase = np.mod(grid.start, PERIOD)
    assert np.all(np.minimum(phase, PERIOD - phase) < 1e-6)  # the grid runs from the trace's clock origin
    assert grid.metrics["wait_mean"] > free.metrics["wait_mean"]
    # a job the event-driven simulator starts at its submit starts at the next grid point instead
    submit = np.array([j.submit for j in win.jobs])
    at_once = np.flatnonzero(free.start == submit)
    assert len(at_once)
    delay = grid.start[at_once] - submit[at_once]
    assert np.all(delay >= 0) and np.median(delay) <= PERIOD


def test_default_is_a_pass_at_every_event() -> None:
    win = _window()
    a = simulate(win, Multifactor(), SimConfig())
    b = simulate(win, Multifactor(), SimConfig(pass_period=0.0))
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert a.metrics == b.metrics
