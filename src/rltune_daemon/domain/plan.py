"""A Plan is data: what the planner wants, before any applier touches Slurm or the simulator."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class PlacementKind(StrEnum):
    """``default``: leave placement to Slurm (cons_tres packing). ``pack``: fill partially used nodes.
    ``spread``: take otherwise idle nodes so the job runs alone (no co-location slowdown)."""

    DEFAULT = "default"
    PACK = "pack"
    SPREAD = "spread"


@dataclass(frozen=True, slots=True)
class Placement:
    kind: PlacementKind = PlacementKind.DEFAULT
    nodes: tuple[str, ...] = ()

    @property
    def is_hint(self) -> bool:
        """True when the applier should steer the job to ``nodes`` (by excluding every other node)."""
        return self.kind is not PlacementKind.DEFAULT and bool(self.nodes)


DEFAULT_PLACEMENT = Placement()


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanEntry:
    """One pending job in plan order. ``site_factor`` is the absolute SiteFactor to set so that Slurm's
    priority order of the planned jobs equals the plan order; ``target_priority`` is the resulting
    priority; ``reason`` is a short human explanation for dry-run tables and logs."""

    job_id: str
    rank: int
    score: float
    current_priority: int
    target_priority: int
    site_factor: int
    placement: Placement
    reason: str
    starts_now: bool = False  # the planner found room for the job now (hints are set only then)


@dataclass(frozen=True)
class Plan:
    clock: float
    policy: str
    entries: tuple[PlanEntry, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    fallback: str = ""

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(e.job_id for e in self.entries)

    def entry(self, job_id: str) -> PlanEntry:
        for e in self.entries:
            if e.job_id == job_id:
                return e
        raise KeyError(job_id)
