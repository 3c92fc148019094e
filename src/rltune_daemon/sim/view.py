"""What a controller sees of the simulator and may do to it, as SimPy's ``Environment`` is to its
processes: read-only views of the clock, the jobs and the cluster, and the three things a real Slurm
lets the daemon do between its scheduling passes (restrict a pending job's nodes, lift that, change
priorities). Controllers get a ``SimView`` in every callback; only the simulator's owner (the engine,
``SimSlurm``'s clock, the training environment) holds the ``Simulator`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import numpy as np

from rltune_daemon.domain import Job, PendingState, Snapshot, Workload
from rltune_daemon.domain.arrays import F64, I64, JobTable
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.domain.history import RunHistory
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.domain.snapshot import NodeAlloc, NodeState, RunningJob
from rltune_daemon.placement.allocate import FreeView, fits
from rltune_daemon.placement.context import PlacementContext

if TYPE_CHECKING:
    from rltune_daemon.sim.engine import Simulator

JobState = Literal["unsubmitted", "pending", "running", "ended"]


def _frozen(a: F64) -> F64:
    v = a.view()
    v.flags.writeable = False
    return v


class SimView:
    """The narrow face of one ``Simulator`` (module docstring)."""

    __slots__ = ("_sim",)

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    # ---- reading -------------------------------------------------------------------------------

    @property
    def now(self) -> float:
        return self._sim.now

    @property
    def table(self) -> JobTable:
        """The jobs as submitted (row = job); a controller reads it, never writes it."""
        return self._sim.table

    @property
    def workload(self) -> Workload:
        return self._sim.workload

    @property
    def stats(self) -> Mapping[str, int]:
        """Counts so far: arrived, started, finished, passes, ticks, ..."""
        return MappingProxyType(self._sim.stats)

    @property
    def start(self) -> F64:
        """Start time per row (NaN: not started)."""
        return _frozen(self._sim.start)

    @property
    def end(self) -> F64:
        """End time per row (NaN: not ended)."""
        return _frozen(self._sim.end)

    @property
    def node_names(self) -> tuple[str, ...]:
        return self._sim.cl.names

    def pending_rows(self) -> I64:
        """Rows waiting now, in the engine's queue order."""
        return self._sim.pending_rows()

    def running_rows(self) -> list[int]:
        return list(self._sim.allocs)

    def state_of(self, row: int) -> JobState:
        sim = self._sim
        if not np.isnan(sim.end[row]):
            return "ended"
        if row in sim.allocs:
            return "running"
        return "pending" if sim.is_pending[row] else "unsubmitted"

    def queue_view(self, rows: I64, history: RunHistory | None = None) -> QueueView:
        """What a policy scores ``rows`` by: the jobs, the clock, the cluster and fair-share usage."""
        sim = self._sim
        return QueueView(sim.table, rows, sim.now, sim.cl, sim.usage, history)

    def snapshot(self, states: list[PendingState] | None = None, jobs: tuple[Job, ...] | None = None
                 ) -> Snapshot:
        """The Snapshot a live Slurm read would give now (``states``:
        scheduler state per pending row, in ``pending_rows()`` order; default all zero). ``jobs``: the
        workload's jobs as the source names them (one per row; default the workload's own)."""
        sim = self._sim
        jobs = sim.workload.jobs if jobs is None else jobs
        cl = sim.cl
        rows = sim.pending_rows()
        pend = tuple(jobs[int(r)] for r in rows)
        st = tuple(states) if states is not None else tuple(PendingState() for _ in rows)
        running = []
        for row, alloc in sim.allocs.items():
            est = float(sim.start[row]) + float(sim.limit[row]) * float(sim.slow[row])
            parts = tuple(NodeAlloc(cl.names[int(n)], int(g), int(c), int(m))
                          for n, g, c, m in zip(alloc.nodes, alloc.gpus, alloc.cpus, alloc.mem, strict=True))
            running.append(RunningJob(jobs[row], float(sim.start[row]), est, parts))
        nodes = tuple(
            NodeState(name=spec.name, gpu_type=spec.gpu_type, gpus=spec.gpus,
                      gpus_alloc=int(spec.gpus - cl.gpus_free[i]), cpus=spec.cpus,
                      cpus_alloc=int(spec.cpus - cl.cpus_free[i]), mem_mb=spec.mem_mb,
                      mem_alloc_mb=int(spec.mem_mb - cl.mem_free[i]), partitions=spec.partitions,
                      state="mixed" if cl.jobs_on[i] else "idle", usable=bool(cl.usable[i]))
            for i, spec in enumerate(sim.workload.cluster.nodes))
        partitions = sim.workload.cluster.partitions
        return Snapshot(sim.now, pend, st, tuple(running), nodes, partitions, "simulator")


    # ---- placing -------------------------------------------------------------------------------

    def free_now(self) -> FreeView:
        cl = self._sim.cl
        return FreeView(cl.gpus_free, cl.cpus_free, cl.mem_free)

    def fits_now(self, row: int, free: FreeView) -> bool:
        """Whether ``row`` could start under ``free`` (any placement style)."""
        sim = self._sim
        return fits(sim.cl, sim.elig, sim.shapes, row, free)

    def placement_context(self, effects: EffectsConfig) -> PlacementContext:
        sim = self._sim
        return PlacementContext(sim.table, sim.shapes, sim.cl, sim.elig, effects)

    @property
    def n_nodes(self) -> int:
        return self._sim.cl.n_nodes

    # ---- acting (what scontrol update lets the daemon do) -----------------------------------------

    def set_hint(self, row: int, nodes: I64) -> None:
        """Restrict pending ``row`` to ``nodes`` (an ExcNodeList of every other node)."""
        self._sim.set_hint(row, nodes)

    def clear_hint(self, row: int) -> None:
        self._sim.clear_hint(row)

    def reprioritised(self) -> None:
        """Priorities changed: the next tick's scheduling pass must run."""
        self._sim.reprioritised()
