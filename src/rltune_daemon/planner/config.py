"""Planner knobs (the daemon's config file maps onto these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from rltune_daemon.domain.effects import EffectsConfig

# The daemon's cycle timing, shared by its config and by daemon-mode evaluation: a full cycle every
# INTERVAL_DEFAULT seconds, and a queue check every REACT_DEFAULT seconds that starts a cycle at once
# when a job arrived, started or finished (0: no checks between cycles).
INTERVAL_DEFAULT = 60.0
REACT_DEFAULT = 5.0
# The starvation guard (PlannerConfig): kept below its multifactor position at most
# max(4 h, 2 × time limit), never beyond 7 days. The stretch was chosen on training-split windows
# (docs/research.md, "Starvation guard").
STARVATION_SECONDS_DEFAULT = 4 * 3600.0
STARVATION_STRETCH_DEFAULT = 2.0
STARVATION_STRETCH_MAX = 1000.0  # beyond this the cap alone decides; a larger value is a typo
STARVATION_CAP_DEFAULT = 7 * 86400.0
# What "kept back" is measured against: Slurm's own (multifactor) order, submit order, or both (a job
# below either of its two positions is kept back and goes back to the earlier one). Slurm's order by
# default: the guard promises a job no worse than what the cluster's own priority gives it; measured
# against submit order too it lifts the large jobs multifactor itself keeps waiting for days, and the
# small jobs pay for that (docs/learning.md, "Searches for a default that does no harm").
GuardReference = Literal["priority", "submit", "both"]
# What the policy may reorder: every plannable job, or only jobs of one job-size class among themselves
# (per PriorityTier and partition), each class keeping the places Slurm's own order gives it; and how
# many blocked jobs per partition keep their places because Slurm drains nodes for them (same page).
Reorder = Literal["queue", "size-class"]
REORDERS: tuple[Reorder, ...] = ("queue", "size-class")
REORDER_DEFAULT: Reorder = "size-class"
NEXT_IN_LINE_DEFAULT = 3
GUARD_REFERENCES: tuple[GuardReference, ...] = ("priority", "submit", "both")
STARVATION_REFERENCE_DEFAULT: GuardReference = "priority"


_Choice = TypeVar("_Choice", bound=str)


def _one_of(name: str, choices: tuple[_Choice, ...], what: str) -> _Choice:
    """``name`` as one of ``choices`` (callers validate user input first; this narrows the type)."""
    for choice in choices:
        if choice == name:
            return choice
    raise ValueError(f"{what} {name!r}: expected one of {', '.join(choices)}")


def guard_reference(name: str) -> GuardReference:
    return _one_of(name, GUARD_REFERENCES, "starvation reference")


def reorder_scope(name: str) -> Reorder:
    return _one_of(name, REORDERS, "reorder")


@dataclass(frozen=True)
class PlannerConfig:
    """``top_k``: jobs the placement step considers. ``starvation_seconds``: longest a job may stay
    below its multifactor position before the guard restores that position; ``starvation_stretch``
    (0: off) lengthens that to ``stretch × time limit`` for long jobs, a bound on the expansion factor
    (Maui's XFactor) our order may cost a job rather than one wall-clock bound for all, so a queue
    under overload keeps the learned order instead of turning back into multifactor; never beyond
    ``starvation_cap_seconds`` (an UNLIMITED job counts as a year). ``starvation_slots``: how
    many such jobs per PriorityTier the guard restores at once, longest-kept first (0: all); the others
    wait their turn in the planned order, so an overloaded queue does not turn back into multifactor.
    ``starvation_reference``: the position a job is measured against and restored to: Slurm's own
    priority order, submit order (a bound on how long later jobs are ranked above it), or the earlier
    of the two (both promises at once, the default).
    ``exempt_*``: jobs the planner never touches (SLA-bound work keeps Slurm's own priority).
    ``only_users``/``only_accounts``: when set, the planner touches no other user's/account's jobs
    (a pilot on one team's work; a replay on a shared cluster steers only its own jobs).
    ``placement``: emit node hints.
    ``reorder``: ``queue`` lets the policy order every plannable job; ``size-class`` reorders only jobs
    of one size class (GPUs: 0, 1, 2, 3-4, 5-8, ...; per PriorityTier and partition) among themselves,
    in the places Slurm's own order gives that class. An order that favours short jobs otherwise
    lowers every mean by sending the large jobs, which need the cluster to drain, to the back.
    ``next_in_line``: with ``size-class``, the first N jobs of each tier and partition (in Slurm's own
    order) that do not fit the free resources now keep their places: Slurm's backfill is draining nodes
    for them, and putting another job of their class there wastes that drain."""

    top_k: int = 16
    placement: bool = True
    starvation_seconds: float = STARVATION_SECONDS_DEFAULT
    starvation_slots: int = 0
    starvation_stretch: float = STARVATION_STRETCH_DEFAULT
    starvation_cap_seconds: float = STARVATION_CAP_DEFAULT
    starvation_reference: GuardReference = STARVATION_REFERENCE_DEFAULT
    exempt_qos: tuple[str, ...] = ()
    exempt_partitions: tuple[str, ...] = ()
    exempt_users: tuple[str, ...] = ()
    exempt_accounts: tuple[str, ...] = ()
    only_users: tuple[str, ...] = ()
    only_accounts: tuple[str, ...] = ()
    reorder: Reorder = REORDER_DEFAULT
    next_in_line: int = NEXT_IN_LINE_DEFAULT
    effects: EffectsConfig = field(default_factory=EffectsConfig)

    def guard_seconds(self, time_limit: float) -> float:
        """How long a job with this time limit may stay below its multifactor position."""
        stretched = min(self.starvation_stretch * time_limit, self.starvation_cap_seconds)
        return max(self.starvation_seconds, stretched)


def loop_settings(cfg: PlannerConfig, interval: float, react: float) -> dict[str, Any]:
    """The cycle timing and starvation guard a daemon-mode policy runs under, as plain data: a model's
    manifest records its rollouts' (``rollouts``) and the daemon compares its own with them at start,
    since a model is tuned to the loop it was trained in."""
    return {"interval": interval, "react": react, "starvation_seconds": cfg.starvation_seconds,
            "starvation_slots": cfg.starvation_slots, "starvation_stretch": cfg.starvation_stretch,
            "starvation_cap_seconds": cfg.starvation_cap_seconds,
            "starvation_reference": cfg.starvation_reference, "reorder": cfg.reorder,
            "next_in_line": cfg.next_in_line}
