"""Short human reasons for dry-run tables and logs: why a job sits where the plan puts it."""

from __future__ import annotations

from rltune_daemon.domain.arrays import JobTable
from rltune_daemon.domain.plan import Placement, PlacementKind
from rltune_daemon.formats.slurm import short_duration
from rltune_daemon.planner.config import GuardReference


def describe(table: JobTable, row: int, now: float, policy: str, pos: int, base_pos: int, guarded: bool,
             placement: Placement, starts_now: bool, reference: GuardReference) -> str:
    """E.g. ``up 5 (sjf): short (20m asked), 1 GPU, waited 2.0h; starts now on p100-1 (spread)``."""
    parts: list[str] = []
    if guarded and reference == "priority":
        head = f"starvation guard: kept at multifactor position {base_pos + 1}"
    elif guarded:
        label = "submit-order" if reference == "submit" else "earlier of multifactor and submit-order"
        head = f"starvation guard: back at its {label} position"
    elif pos < base_pos:
        head = f"up {base_pos - pos} ({policy})"
    elif pos > base_pos:
        head = f"down {pos - base_pos} ({policy})"
    else:
        head = f"unchanged ({policy})"
    parts.append(f"{short_duration(float(table.time_limit[row]))} asked")
    gpus = int(table.gpus[row])
    parts.append(f"{gpus} GPU" + ("s" if gpus != 1 else ""))
    parts.append(f"waited {short_duration(max(now - float(table.submit[row]), 0.0))}")
    text = f"{head}: " + ", ".join(parts)
    if starts_now:
        if placement.kind is PlacementKind.DEFAULT or not placement.nodes:
            text += "; starts now"
        else:
            text += f"; starts now on {','.join(placement.nodes)} ({placement.kind.value})"
    return text
