"""Simulator settings. Defaults are what the evaluation reports; every number is documented in
docs/simulator.md."""

from __future__ import annotations

from dataclasses import dataclass, field

from rltune_daemon.errors import UserError


@dataclass(frozen=True)
class EffectsConfig:
    """How placement changes run time (``pure()`` switches it off).

    A job that starts on a node already running another job runs ``1 + colocation`` times longer
    (host-side contention: PCIe, CPU, memory bandwidth, I/O). A multi-node job that shares nodes also
    pays ``cross_node`` per extra node: gang-synchronised training moves at the pace of its slowest
    worker, and each shared node is another chance of a straggler. The factor is fixed at start.
    """

    colocation: float = 0.10
    cross_node: float = 0.05

    @staticmethod
    def pure() -> EffectsConfig:
        return EffectsConfig(0.0, 0.0)

    def factor(self, shared: bool, n_nodes: int) -> float:
        if not shared:
            return 1.0
        return 1.0 + self.colocation + self.cross_node * max(n_nodes - 1, 0)


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
