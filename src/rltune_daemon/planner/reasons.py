"""Short human reasons for dry-run tables and logs: why a job sits where the plan puts it."""

from __future__ import annotations

from rltune_daemon.domain.arrays import JobTable
from rltune_daemon.domain.plan import Placement, PlacementKind
from rltune_daemon.formats.slurm import short_duration
from rltune_daemon.planner.config import GuardReference


class Reasons:
    """The reason of each row of one plan, e.g. ``up 5 (sjf): 20m asked, 1 GPU, waited 2.0h; starts now
    on p100-1 (spread)``; the table's columns are read once and the time limits' wording kept per
    distinct limit."""

    def __init__(self, table: JobTable, now: float, policy: str, reference: GuardReference) -> None:
        self.now, self.policy, self.reference = now, policy, reference
        self.limit: list[float] = table.time_limit.tolist()
        self.gpus: list[int] = table.gpus.tolist()
        self.submit: list[float] = table.submit.tolist()
        self._asked: dict[float, str] = {}

    def __call__(self, row: int, pos: int, base_pos: int, guarded: bool, placement: Placement,
                 starts_now: bool) -> str:
        if guarded and self.reference == "priority":
            head = f"starvation guard: kept at multifactor position {base_pos + 1}"
        elif guarded:
            label = ("submit-order" if self.reference == "submit"
                     else "earlier of multifactor and submit-order")
            head = f"starvation guard: back at its {label} position"
        elif pos < base_pos:
            head = f"up {base_pos - pos} ({self.policy})"
        elif pos > base_pos:
            head = f"down {pos - base_pos} ({self.policy})"
        else:
            head = f"unchanged ({self.policy})"
        limit = self.limit[row]
        asked = self._asked.get(limit)
        if asked is None:
            asked = self._asked[limit] = f"{short_duration(limit)} asked"
        gpus = self.gpus[row]
        text = (f"{head}: {asked}, {gpus} GPU{'s' if gpus != 1 else ''}, "
                f"waited {short_duration(max(self.now - self.submit[row], 0.0))}")
        if starts_now:
            if placement.kind is PlacementKind.DEFAULT or not placement.nodes:
                text += "; starts now"
            else:
                text += f"; starts now on {','.join(placement.nodes)} ({placement.kind.value})"
        return text
