"""Planner knobs (the daemon's config file maps onto these)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rltune_daemon.sim.config import EffectsConfig

# The daemon's cycle timing, shared by its config and by daemon-mode evaluation: a full cycle every
# INTERVAL_DEFAULT seconds, and a queue check every REACT_DEFAULT seconds that starts a cycle at once
# when a job arrived, started or finished (0: no checks between cycles).
INTERVAL_DEFAULT = 60.0
REACT_DEFAULT = 5.0


@dataclass(frozen=True)
class PlannerConfig:
    """``top_k``: jobs the placement step considers. ``starvation_seconds``: longest a job may stay
    below its multifactor position before the guard restores that position. ``starvation_slots``: how
    many such jobs per PriorityTier the guard restores at once, longest-kept first (0: all); the others
    wait their turn in the planned order, so an overloaded queue does not turn back into multifactor.
    ``exempt_*``: jobs the planner never touches (SLA-bound work keeps Slurm's own priority).
    ``placement``: emit node hints."""

    top_k: int = 16
    placement: bool = True
    starvation_seconds: float = 4 * 3600.0
    starvation_slots: int = 0
    exempt_qos: tuple[str, ...] = ()
    exempt_partitions: tuple[str, ...] = ()
    exempt_users: tuple[str, ...] = ()
    exempt_accounts: tuple[str, ...] = ()
    effects: EffectsConfig = field(default_factory=EffectsConfig)
