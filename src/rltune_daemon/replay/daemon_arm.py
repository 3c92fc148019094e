"""The real daemon of a replay arm, in its own process, with a compressed cycle.

``python -m rltune_daemon.replay.daemon_arm SETTINGS.json`` builds the daemon's configuration in code:
``interval`` and ``react`` are the shipped defaults divided by the replay's speedup (60 s -> 1 s at
S = 60), below the 5-s floor that ``rltune-daemon``'s configuration keeps for real clusters; this
entry point is the only place that floor is crossed, and only for a cluster whose clock is compressed.
The backend presents Slurm's clock to the planner in trace time (every time and duration it reads times
the speedup around the replay's start), so the starvation guard, the model's wait and run-time inputs
and the MILP see the values they were built for. SIGTERM (sent by the replay at the arm's end, or on
Ctrl-C) takes the daemon's own shutdown path: every SiteFactor and node list it changed is restored.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.snapshot import RunningJob, Snapshot
from rltune_daemon.errors import run_guarded
from rltune_daemon.planner.config import INTERVAL_DEFAULT, REACT_DEFAULT, REORDER_DEFAULT
from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.config import DaemonConfig, load_config
from rltune_daemon.service.logging import configure, get_logger
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.notify import Notifier
from rltune_daemon.service.statefile import StateFile


class TraceClockBackend(SlurmBackend):
    """``SlurmBackend`` whose reads are in trace time: ``t -> origin + (t - origin) * speedup`` for
    instants, ``d -> d * speedup`` for durations. Writes, ids and node names pass through unchanged."""

    def __init__(self, cfg: DaemonConfig, origin: float, speedup: float) -> None:
        super().__init__(cfg)
        self.origin = origin
        self.speedup = speedup

    def _t(self, t: float) -> float:
        return self.origin + (t - self.origin) * self.speedup

    def read(self) -> Snapshot:
        snap = super().read()
        s = self.speedup
        pending = tuple(dataclasses.replace(j, submit=self._t(j.submit), time_limit=j.time_limit * s)
                        for j in snap.pending)
        running = tuple(RunningJob(dataclasses.replace(r.job, submit=self._t(r.job.submit),
                                                       time_limit=r.job.time_limit * s),
                                   self._t(r.start), self._t(r.est_end), r.allocation) for r in snap.running)
        return dataclasses.replace(snap, clock=self._t(snap.clock), pending=pending, running=running)

    def finished_runs(self, rewind: bool = False) -> FinishedRuns | None:
        runs = super().finished_runs(rewind)
        if runs is None:
            return None
        end = np.asarray(runs.end, dtype=np.float64)
        return dataclasses.replace(runs, runtime=np.asarray(runs.runtime, dtype=np.float64) * self.speedup,
                                   end=self.origin + (end - self.origin) * self.speedup)


def scaled_config(settings: dict[str, Any]) -> DaemonConfig:
    """The daemon's configuration for one arm (validated as usual), then the compressed cycle."""
    speedup = float(settings["speedup"])
    slurm: dict[str, Any] = {"conf": settings["conf"], "max_calls_per_cycle": 1000}
    scope: dict[str, Any] = {}
    if settings.get("scope_user"):  # an existing cluster: nobody else's jobs, no other partition
        scope["users"] = [settings["scope_user"]]
        slurm["partitions"] = [settings["partition"]]
    cfg = load_config(
        None, interval=INTERVAL_DEFAULT, react=REACT_DEFAULT, base_policy=settings["base_policy"],
        # an arm measures the model it names, whatever its manifest's own held-out record says
        model=settings.get("model", ""), run_model_behind_base=True, state_file=settings["state_file"],
        metrics={"enabled": False}, log={"format": "json", "level": "info"}, slurm=slurm,
        planner={"placement": bool(settings["placement"]),
                 "reorder": settings.get("reorder", REORDER_DEFAULT)}, scope=scope,
    )
    interval, react = scaled_cycle(speedup)
    # model_copy skips validation on purpose: the floors protect real clusters, not this one.
    return cfg.model_copy(update={"interval": interval, "react": react})


REACT_FLOOR_S = 0.25  # wall seconds: each queue check is one squeue; 5 s / 120 would be 24 a second


def scaled_cycle(speedup: float) -> tuple[float, float]:
    """The daemon's (interval, react) in wall seconds on a cluster ``speedup`` times faster: both
    divided by the speedup, react no shorter than ``REACT_FLOOR_S``. The simulated counterpart uses
    the same values times the speedup (``trace_cycle``)."""
    interval = INTERVAL_DEFAULT / speedup
    react = min(max(REACT_DEFAULT / speedup, REACT_FLOOR_S), interval)
    return interval, react


def trace_cycle(speedup: float) -> tuple[float, float]:
    """``scaled_cycle`` in trace seconds."""
    interval, react = scaled_cycle(speedup)
    return interval * speedup, react * speedup


def main(argv: list[str]) -> int:
    settings = json.loads(Path(argv[0]).read_text())

    def go() -> int:
        cfg = scaled_config(settings)
        configure(cfg.log.level, cfg.log.format)
        log = get_logger()
        state_file = StateFile(cfg.resolved_state_file())
        state_file.check_writable()
        state_file.lock()
        try:
            backend = TraceClockBackend(cfg, float(settings["origin"]), float(settings["speedup"]))
            daemon = Daemon(cfg, backend, state_file=state_file, log=log, metrics=Metrics(),
                            notifier=Notifier({}), table=False)
            log.info("starting", backend="slurm", interval=cfg.interval, react=cfg.react,
                     speedup=settings["speedup"], policy=daemon.choice.label, replay=True)
            return daemon.run()
        finally:
            state_file.close()
            state_file.unlock()

    return run_guarded(go)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
