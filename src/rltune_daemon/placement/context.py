"""What a placer sees and returns; shared by the greedy placer and the MILP."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from rltune_daemon.domain.arrays import I64, ClusterArrays, JobTable
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.placement.allocate import Allocation
from rltune_daemon.placement.shapes import EligibilityIndex, JobShapes


@dataclass(frozen=True)
class PlacementContext:
    """A cluster state and the pending jobs' table/shapes. ``effects`` is the slowdown model the
    objective trades against (the simulator's, so the placer and the simulator agree)."""

    table: JobTable
    shapes: JobShapes
    cluster: ClusterArrays
    elig: EligibilityIndex
    effects: EffectsConfig = field(default_factory=EffectsConfig)


# why the MILP's result was not used (``PlacementResult.reason``); the daemon adds ``unavailable`` (no
# MILP module) for its ``rltune_milp_fallbacks_total{reason}``
FALLBACK_REASONS = ("timeout", "infeasible", "solver-error", "inconsistent")


@dataclass(frozen=True)
class PlacementResult:
    """Allocations for the ranked jobs that can start now, jointly feasible. ``solver`` says what
    produced them (``milp`` or ``greedy``); when the MILP was not used, ``reason`` says why (one of
    ``FALLBACK_REASONS``, what counters group by) and ``fallback`` in words (``"<reason>: <detail>"``, what
    logs show)."""

    allocations: dict[int, Allocation]
    solver: str
    fallback: str = ""
    seconds: float = 0.0
    reason: str = ""


class Placer(Protocol):
    def __call__(self, ctx: PlacementContext, rows: I64) -> PlacementResult: ...
