"""Simulator settings. Defaults are what the evaluation reports; every number is documented in
docs/simulator.md."""

from __future__ import annotations

from dataclasses import dataclass, field

from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.errors import UserError

SLURM_RESERVATIONS = 500  # Slurm's bf_max_job_test default: backfill reserves for every job it tests


@dataclass(frozen=True)
class SimConfig:
    """``bf_max_job_test`` bounds how many jobs behind a blocked head backfill examines per pass (Slurm's
    SchedulerParameters option of the same name). ``bf_reservations`` is how many blocked jobs of each
    partition get a reservation per pass: 1 is EASY backfill (the head only, what every published number
    uses); Slurm's backfill reserves for every job it tests, i.e. ``bf_max_job_test``. ``record`` keeps
    reservations and allocations for tests. ``pass_period`` > 0 runs scheduling passes only on a grid
    of that many seconds (an event's pass waits for the next grid point): Slurm's backfill thread, which
    starts nearly every job, wakes every ``bf_interval``; ``rltune replay`` sets it to compare with a
    real cluster (docs/fidelity.md). 0, the default, runs a pass at every event that can start a job.
    ``main_at_events`` (with ``pass_period``) also starts, at the event itself, the jobs in priority order
    up to each partition's first blocked job, as Slurm's main scheduler does; backfill waits for the grid."""

    effects: EffectsConfig = field(default_factory=EffectsConfig)
    backfill: bool = True
    bf_max_job_test: int = 500
    bf_reservations: int = 1
    record: bool = False
    pass_period: float = 0.0
    main_at_events: bool = False


def checked_reservations(n: int) -> int:
    """``n`` as ``bf_reservations``, or the one-line error every command gives for a bad value."""
    if n < 1:
        raise UserError(f"--bf-reservations {n}: must be at least 1 (1: EASY backfill, the head job only)")
    return n
