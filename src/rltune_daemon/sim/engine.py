"""The event loop: arrivals, finishes and periodic ticks drive Slurm-like scheduling passes.

Events are merged from the (sorted) submit times and a heap of finish times keyed by
``(time, sequence)`` so equal times resolve in a fixed order (SimPy's monotonic tie-break). At one
instant, a controller tick comes first: a daemon reading the queue at ``t`` does not see a job submitted
or ending at ``t`` (otherwise a tick grid that matches a trace's 1-s timestamps would re-plan before every
event, a reaction time no daemon has). The tick has a scheduling pass of its own only when the
controller steered the queue since the last tick (a priority or node hint changed): a daemon that writes
nothing then leaves exactly the passes, and so the schedule, of the cluster without it. Then finishes
are applied, then arrivals, then one scheduling pass.

A pass walks pending jobs in the controller's order and starts every job that fits (Slurm's main
scheduler) until a job does not; that job becomes its partition's *head* and gets a reservation at the
earliest time its resources are free according to running jobs' *requested* end times. Later jobs are
backfilled only if they cannot delay any head: they end (by their requested time) before the head's
reservation, or the head still fits at that time with them in place (EASY backfill; the reservation
check is done against resources, not fixed nodes). Requested time is never shorter than the true
runtime, so a head always starts no later than its reservation under a static priority order.
``SimConfig.bf_reservations`` > 1 reserves for the first N blocked jobs of each partition instead, as
Slurm's backfill reserves for every job it tests (docs/simulator.md).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, ClusterArrays, JobTable
from rltune_daemon.domain.plan import PlacementKind
from rltune_daemon.domain.workload import Workload
from rltune_daemon.placement.allocate import Allocation, FreeView, allocate, fits, give, live_view, take
from rltune_daemon.placement.shapes import EligibilityIndex, job_shapes
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.fairshare import UsageTracker
from rltune_daemon.sim.config import SimConfig
from rltune_daemon.sim.controller import Controller, PolicyController
from rltune_daemon.sim.metrics import summarize
from rltune_daemon.sim.reservations import Reservation, plan_after
from rltune_daemon.sim.view import SimView

TIER_SPAN = 1e12  # static keys: -tier * TIER_SPAN + score keeps tiers apart in one float


R = TypeVar("R")


@dataclass(kw_only=True)
class SimResult:
    """Per-job outcome (NaN where a job did not run) and the summary metrics."""

    policy: str
    start: F64
    end: F64
    slowdown: F64
    metrics: dict[str, Any]
    stats: dict[str, int]
    dropped: list[str] = field(default_factory=list)
    reservations: list[tuple[int, float, float]] = field(default_factory=list)
    allocations: dict[int, Allocation] = field(default_factory=dict)


class Simulator:
    """Simulates ``workload`` on its cluster from an idle start, as the paper's environment does."""

    _memoize = True  # tests switch the per-pass failure memo off to prove it changes nothing

    def __init__(self, workload: Workload, controller: Controller, config: SimConfig | None = None) -> None:
        self.workload = workload
        self.config = config or SimConfig()
        self.controller = controller
        self.view = SimView(self)  # all a controller sees of this simulator
        self.table: JobTable = JobTable.from_jobs(workload.jobs, workload.cluster)
        self.cl: ClusterArrays = ClusterArrays.from_spec(workload.cluster)
        self.elig = EligibilityIndex.build(self.cl)
        self.shapes = job_shapes(self.table, self.elig)
        n = len(self.table)
        self.now = 0.0
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.slow = np.ones(n)
        self.allocs: dict[int, Allocation] = {}
        self.usage = UsageTracker(len(self.table.users))
        self.runtime = np.where(np.isnan(self.table.runtime), self.table.time_limit, self.table.runtime)
        # The scheduler may rely on requested time as an upper bound (Slurm kills at the limit).
        self.limit = np.maximum(self.table.time_limit, self.runtime)
        self.is_pending = np.zeros(n, dtype=np.bool_)
        self.pending: I64 = np.zeros(0, dtype=np.int64)
        self.pkeys: F64 = np.zeros(0)
        self.hints: dict[int, I64] = {}  # row -> node indices it must use (daemon-mode ReqNodeList)
        self.stats = dict.fromkeys(
            ("passes", "started", "finished", "arrived", "backfilled", "reservations", "ticks"), 0)
        self.reservation_log: list[tuple[int, float, float]] = []
        self.alloc_log: dict[int, Allocation] = {}
        self._heap: list[tuple[float, int, int]] = []
        self._seq = 0
        self._arrived = 0  # rows before this one have been submitted (the arrival cursor)
        interval = controller.interval
        self._next_tick = float(self.table.submit[0]) if (interval and n) else math.inf
        self._next_pass = math.inf  # the next grid pass that an event asked for (``pass_period`` > 0)
        self._main_only = False  # a pass without backfill (``main_at_events``)
        self.dropped = [self.table.ids[i] for i in np.flatnonzero(~self.shapes.feasible)]
        sh = self.shapes
        self._groups = np.unique(sh.group) if n else np.zeros(0, dtype=np.int64)
        self._one_partition = len(np.unique(self.table.partition)) <= 1
        shape_cols = (np.stack([sh.group, sh.chunk, sh.k, sh.cpus_node, sh.mem_node, self.table.gpus]) if n
                      else np.zeros((6, 0), dtype=np.int64))
        _, inverse = np.unique(shape_cols, axis=1, return_inverse=True)
        self._shape_id = inverse.reshape(-1).astype(np.int64)
        self._n_shapes = int(self._shape_id.max()) + 1 if n else 0
        self._has_hint = np.zeros(n, dtype=np.bool_)
        self._steered = False  # a priority or hint changed since the last tick: its pass must run
        # Reservations beyond the head depend only on the cluster state, the job and those before it:
        # kept until the state changes (``_version``: starts, finishes, arrivals, hints), so the daemon's
        # ticks that change nothing do not re-plan them.
        self._version = 0
        self._res_cache: dict[tuple[int, int, tuple[tuple[int, float], ...]], Reservation] = {}

    # ------------------------------------------------------------------ queue bookkeeping
    def pending_rows(self) -> I64:
        """Pending rows (in start order for static controllers)."""
        if len(self.pending) and not self.is_pending[self.pending].all():
            keep = self.is_pending[self.pending]
            self.pending = self.pending[keep]
            if self.controller.static:
                self.pkeys = self.pkeys[keep]
        return self.pending

    def _enqueue(self, rows: I64) -> None:
        self.is_pending[rows] = True
        self._version += 1
        self.stats["arrived"] += len(rows)
        for r in rows:
            self.usage.submit(int(self.table.user[r]))
        if self.controller.static:
            self.pending_rows()
            keys = self.controller.static_keys(self.view, rows) - self.table.tier[rows] * TIER_SPAN
            order = np.lexsort((rows, keys))
            rows, keys = rows[order], keys[order]
            pos = np.searchsorted(self.pkeys, keys, side="right")
            self.pending = np.insert(self.pending, pos, rows)
            self.pkeys = np.insert(self.pkeys, pos, keys)
        else:
            self.pending = np.concatenate([self.pending, rows])

    def set_hint(self, row: int, nodes: I64) -> None:
        """Restrict a pending job to ``nodes`` (a ReqNodeList placement hint)."""
        old = self.hints.get(row)
        if old is not None and np.array_equal(old, nodes):
            return
        self.hints[row] = nodes
        self._has_hint[row] = True
        self._version += 1
        self._steered = True

    def clear_hint(self, row: int) -> None:
        """Lift a pending job's node hint (the controller's write)."""
        if self._drop_hint(row):
            self._steered = True

    def _drop_hint(self, row: int) -> bool:
        self._has_hint[row] = False
        if self.hints.pop(row, None) is None:
            return False
        self._version += 1
        return True

    def reprioritised(self) -> None:
        """The controller changed pending jobs' priorities outside ``order`` (a daemon's SiteFactor
        write): the tick runs a scheduling pass, as slurmctld schedules after a job update."""
        self._steered = True

    # ------------------------------------------------------------------ start / finish
    def _start(self, row: int, alloc: Allocation) -> None:
        cl = self.cl
        shared = bool((cl.jobs_on[alloc.nodes] > 0).any())
        factor = self.config.effects.factor(shared, alloc.n_nodes)
        run = float(self.runtime[row]) * factor
        est = float(self.limit[row]) * factor
        take(live_view(cl), alloc)
        self._version += 1
        cl.jobs_on[alloc.nodes] += 1
        k = alloc.n_nodes
        cl.run_node = np.concatenate([cl.run_node, alloc.nodes])
        cl.run_gpus = np.concatenate([cl.run_gpus, alloc.gpus])
        cl.run_cpus = np.concatenate([cl.run_cpus, alloc.cpus])
        cl.run_mem = np.concatenate([cl.run_mem, alloc.mem])
        cl.run_end = np.concatenate([cl.run_end, np.full(k, self.now + est)])
        cl.run_job = np.concatenate([cl.run_job, np.full(k, row, dtype=np.int64)])
        self.start[row] = self.now
        self.slow[row] = factor
        self.allocs[row] = alloc
        if self.config.record:
            self.alloc_log[row] = alloc
        self.is_pending[row] = False
        self._drop_hint(row)
        self.usage.start(int(self.table.user[row]), int(self.table.gpus[row]), self.now)
        self._seq += 1
        heapq.heappush(self._heap, (self.now + run, self._seq, row))
        self.stats["started"] += 1
        self.controller.on_start(self.view, row)

    def _finish(self, row: int) -> None:
        cl = self.cl
        alloc = self.allocs.pop(row)
        give(live_view(cl), alloc)
        self._version += 1
        cl.jobs_on[alloc.nodes] -= 1
        keep = cl.run_job != row
        cl.run_node, cl.run_gpus, cl.run_cpus = cl.run_node[keep], cl.run_gpus[keep], cl.run_cpus[keep]
        cl.run_mem, cl.run_end, cl.run_job = cl.run_mem[keep], cl.run_end[keep], cl.run_job[keep]
        self.end[row] = self.now
        self.stats["finished"] += 1
        start = float(self.start[row])
        self.usage.finish(int(self.table.user[row]), int(self.table.gpus[row]), start, self.now)
        self.controller.on_finish(self.view, row, self.now - start)

    # ------------------------------------------------------------------ scheduling pass
    def _prefilter(self, order: I64) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Optimistic "could fit now" per job (GPUs only; CPU/memory are checked on allocation)."""
        sh, cl = self.shapes, self.cl
        out = np.zeros(len(order), dtype=np.bool_)
        groups = sh.group[order]
        for g in self._groups:
            sel = groups == g if len(self._groups) > 1 else np.ones(len(order), dtype=np.bool_)
            ok, _ = self.elig.get(*sh.group_keys[int(g)])
            free = np.sort(cl.gpus_free[ok & cl.usable])
            rows = order[sel]
            if not len(rows):
                continue
            enough = len(free) - np.searchsorted(free, sh.chunk[rows], side="left")
            out[sel] = enough >= sh.k[rows]
        return out

    def _reserve(self, head: int, log: bool = True) -> Reservation:
        """Earliest time the head fits, releasing running jobs in order of requested end time."""
        cl, sh = self.cl, self.shapes
        self.stats["reservations"] += 1
        allowed = self.hints.get(head)

        def fits_with(k: int) -> tuple[bool, FreeView]:
            fv = self._released(order[:k])
            if allowed is not None:
                return allocate(cl, self.elig, sh, head, int(self.table.gpus[head]), PlacementKind.PACK, fv,
                                self._mask(allowed)) is not None, fv
            return fits(cl, self.elig, sh, head, fv), fv

        order = np.argsort(cl.run_end, kind="stable")
        ends = cl.run_end[order]
        ok, fv = fits_with(0)
        if ok:
            res = Reservation(head, self.now, fv)
        else:
            ok_all, _ = fits_with(len(order))
            if not ok_all:
                return Reservation(head, np.inf, None)
            lo, hi = 1, len(order)  # smallest k with fits_with(k)
            while lo < hi:
                mid = (lo + hi) // 2
                if fits_with(mid)[0]:
                    hi = mid
                else:
                    lo = mid + 1
            at = float(ends[lo - 1])
            k = int(np.searchsorted(ends, at, side="right"))  # everything ending by then is gone
            res = Reservation(head, at, fits_with(k)[1])
        if self.config.record and log:
            self.reservation_log.append((head, self.now, res.at))
        return res

    def _released(self, rows: I64) -> FreeView:
        """Free resources once the running entries ``rows`` (indices into ``cl.run_*``) have ended."""
        cl, n = self.cl, self.cl.n_nodes
        return FreeView(
            cl.gpus_free + np.bincount(cl.run_node[rows], cl.run_gpus[rows], n).astype(np.int64),
            cl.cpus_free + np.bincount(cl.run_node[rows], cl.run_cpus[rows], n).astype(np.int64),
            cl.mem_free + np.bincount(cl.run_node[rows], cl.run_mem[rows], n).astype(np.int64),
        )

    def _reserve_after(self, head: int, prior: list[Reservation]) -> Reservation:
        """Earliest time ``head`` fits for its whole requested time, given running jobs' requested ends
        *and* the reservations made before it in this pass (``bf_reservations`` > 1, as Slurm's backfill
        reserves for every job it tests). Free resources only grow as running jobs end and shrink where
        an earlier reservation starts, so a start ``t`` is tested against the per-node minimum over the
        job's time, from the first time it would fit with no reservation at all (``plan_after``, which
        tests every start at once).

        Only the pass's first reservation keeps EASY's promise (backfill never delays it; the one logged
        when recording): later ones are plans that can move when an earlier one is re-made, as in Slurm."""
        key = (self._version, head, tuple((r.head, r.at) for r in prior))
        if key in self._res_cache:
            self.stats["reservations"] += 1
            return self._res_cache[key]
        if self._res_cache and next(iter(self._res_cache))[0] != self._version:
            self._res_cache.clear()
        res = self._plan_reservation(head, prior)
        if not (res.at <= self.now):  # a start "now" moves with the clock: not kept
            self._res_cache[key] = res
        return res

    def _plan_reservation(self, head: int, prior: list[Reservation]) -> Reservation:
        first = self._reserve(head, log=not prior)
        if first.free is None:
            return first
        mask = self._mask(self.hints[head]) if head in self.hints else None
        return plan_after(self.cl, self.elig, self.shapes, head, int(self.table.gpus[head]),
                          float(self.limit[head]), first.at, prior, mask)

    def _mask(self, nodes: I64) -> np.ndarray[Any, np.dtype[np.bool_]]:
        m = np.zeros(self.cl.n_nodes, dtype=np.bool_)
        m[nodes] = True
        return m

    def _respects(self, row: int, alloc: Allocation, reservations: list[Reservation]) -> bool:
        """Whether starting ``row`` now on ``alloc`` delays no head's reservation; commits if so."""
        factor = self.config.effects.factor(bool((self.cl.jobs_on[alloc.nodes] > 0).any()), alloc.n_nodes)
        end = self.now + float(self.limit[row]) * factor
        touched: list[Reservation] = []
        ok = True
        for res in reservations:
            if res.free is None or end <= res.at:
                continue
            take(res.free, alloc)
            touched.append(res)
            if not fits(self.cl, self.elig, self.shapes, res.head, res.free):
                ok = False
                break
        if not ok:
            for res in touched:
                assert res.free is not None
                give(res.free, alloc)
        return ok

    def _windows(self, order: I64, maybe: np.ndarray[Any, np.dtype[np.bool_]]) -> I64:
        """Positions a pass visits: every possible start up to each partition's first blocked job (its
        head), the head itself, and at most ``bf_max_job_test`` positions of that partition after it,
        of which the ones that cannot start (``maybe`` false) only while they can still get one of the
        partition's ``bf_reservations``."""
        depth = self.config.bf_max_job_test if self.config.backfill and not self._main_only else 0
        cap = max(1, self.config.bf_reservations)
        if self._one_partition:
            blocked = np.flatnonzero(~maybe)
            if not len(blocked):
                return np.arange(len(order))
            b = int(blocked[0])
            vis = np.flatnonzero(maybe[: b + 1 + depth])
            return np.union1d(vis, blocked[blocked < b + 1 + depth][:cap]).astype(np.int64)
        part = self.table.partition[order]
        keep = np.zeros(len(order), dtype=np.bool_)
        for pt in np.unique(part):
            idx = np.flatnonzero(part == pt)
            mb = maybe[idx]
            nb = np.flatnonzero(~mb)
            if not len(nb):
                keep[idx] = True
                continue
            b = int(nb[0])
            window = idx[: b + 1 + depth]
            keep[window[mb[: b + 1 + depth]]] = True
            keep[idx[nb[nb < b + 1 + depth][:cap]]] = True
        return np.flatnonzero(keep)

    def schedule_pass(self) -> Generator[I64, I64, None]:
        """One pass. An ``external`` controller's order is asked for by yielding the pending rows and
        receiving them back sorted (how the gymnasium environment lets an agent act)."""
        self.stats["passes"] += 1
        pend = self.pending_rows()
        if not len(pend):
            return
        ctl = self.controller
        if ctl.static:
            order = pend
        elif ctl.external:
            order = yield pend
        else:
            order = ctl.order(self.view, pend)
        maybe_all = self._prefilter(order)
        vis = self._windows(order, maybe_all)
        rows_v = order[vis]
        maybe_v = maybe_all[vis]
        part_v = self.table.partition[rows_v]
        # Jobs that could not start and hold a reservation, in priority order (None until needed): the
        # first ``bf_reservations`` of each partition (1: EASY, its head only).
        blocked: dict[int, Reservation | None] = {}
        per_part: dict[int, int] = {}
        cap = max(1, self.config.bf_reservations)

        def block(k: int) -> None:
            p = int(part_v[k])
            if per_part.get(p, 0) < cap:
                blocked[int(rows_v[k])] = None
                per_part[p] = per_part.get(p, 0) + 1

        # Jobs of one shape meet the same cluster state until something starts, so a shape that found no
        # allocation, or whose allocation would delay a head, fails again for any job ending no earlier.
        # ``failed[shape]`` is the smallest such end since the last start: exact, only cheaper. It is off
        # for jobs with a node hint and for controllers that choose placements themselves.
        memo = self._memoize and ctl.default_placement
        shp = self._shape_id[rows_v]
        lim = self.limit[rows_v]
        free_form = self._has_hint[rows_v]
        failed = np.full(self._n_shapes, np.inf)
        i, nv = 0, len(vis)
        while i < nv:
            if memo and maybe_v[i] and not free_form[i] and lim[i] >= failed[shp[i]]:
                skip = maybe_v[i:] & ~free_form[i:] & (lim[i:] >= failed[shp[i:]])
                n_skip = len(skip) if skip.all() else int(np.argmin(skip))
                if cap > 1:  # skipped jobs were tested and failed: they hold reservations too
                    for k in range(i, i + n_skip):
                        block(k)
                i += n_skip
                continue
            row = int(rows_v[i])
            pt = int(part_v[i])
            alloc = None
            if maybe_v[i]:
                kind, allowed = ctl.placement(self.view, row)
                hint = self.hints.get(row)
                mask = self._mask(hint) if hint is not None else allowed
                gpus = int(self.table.gpus[row])
                alloc = allocate(self.cl, self.elig, self.shapes, row, gpus, kind, allowed=mask)
                if alloc is None and hint is None and (kind is PlacementKind.SPREAD or allowed is not None):
                    alloc = allocate(self.cl, self.elig, self.shapes, row, gpus)  # preference unmet: default
            if alloc is not None and self._respects(row, alloc, self._materialize(blocked, cap)):
                if pt in per_part:
                    self.stats["backfilled"] += 1
                self._start(row, alloc)
                failed.fill(np.inf)
                i += 1
                continue
            if maybe_v[i] and not free_form[i]:
                end = float(lim[i]) if alloc is not None else 0.0
                failed[shp[i]] = min(failed[shp[i]], end)
            block(i)
            i += 1

    def _materialize(self, blocked: dict[int, Reservation | None], cap: int) -> list[Reservation]:
        """Every blocked job's reservation, made on first need in priority order (with ``cap`` 1 each
        partition's head is reserved on its own, as EASY backfill does)."""
        out: list[Reservation] = []
        for row, made in blocked.items():
            res = made
            if res is None:
                res = self._reserve(row) if cap == 1 else self._reserve_after(row, out)
                blocked[row] = res
            out.append(res)
        return out

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimResult:
        """Simulate to the end (controllers that decide for themselves)."""
        return drive(self.iterate())

    def idle(self) -> bool:
        """Nothing running and nothing pending."""
        return not self._heap and not len(self.pending_rows())

    @property
    def next_tick(self) -> float:
        """When the controller's next periodic tick is due (inf: none)."""
        return self._next_tick

    def next_event(self) -> float:
        """Time of the next arrival or finish (inf when none is left)."""
        t_arr = float(self.table.submit[self._arrived]) if self._arrived < len(self.table) else math.inf
        return min(t_arr, self._heap[0][0] if self._heap else math.inf)

    def _events_at(self, now: float) -> tuple[bool, I64]:
        """Finish every job ending by ``now`` and queue every arrival up to ``now``: (freed, new rows)."""
        self.now = now
        freed = False
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, row = heapq.heappop(heap)
            self._finish(row)
            freed = True
        submit, n, lo = self.table.submit, len(self.table), self._arrived
        while self._arrived < n and submit[self._arrived] <= now:
            self._arrived += 1
        new = np.arange(lo, self._arrived, dtype=np.int64)
        new = new[self.shapes.feasible[new]]
        if len(new):
            self._enqueue(new)
        return freed, new

    def _tick(self, now: float) -> None:
        """The controller's periodic decision, then the next tick: skip idle stretches (the first grid
        point after the next event)."""
        interval = float(self.controller.interval or 0.0)
        self.stats["ticks"] += 1
        self.controller.on_tick(self.view)
        nxt = self.next_event()
        if len(self.pending_rows()):
            self._next_tick = now + interval
        elif np.isfinite(nxt):
            self._next_tick = now + interval * max(1.0, np.ceil((nxt - now) / interval))
        else:
            self._next_tick = math.inf

    def advance(self, until: float = math.inf) -> Generator[I64, I64, None]:
        """The event loop, resumable: process arrivals, finishes and controller ticks up to ``until``,
        with a scheduling pass after each that can start something. Yields like ``schedule_pass``."""
        period = self.config.pass_period
        while True:
            t_event = self.next_event()
            t_pass = self._next_pass  # inf unless passes run on a grid (``SimConfig.pass_period``)
            if math.isinf(t_event) and math.isinf(t_pass):
                return
            now = min(t_event, self._next_tick, t_pass)
            if now > until:
                return
            if self._next_tick <= min(t_event, t_pass):  # the tick first (module docstring)
                self.now = now
                self._tick(now)
                if self._steered:  # only what the controller changed asks for a pass of its own
                    self._steered = False
                    yield from self._pass_after_event(now, period)
                continue
            if t_event <= t_pass:
                freed, new = self._events_at(now)
                if freed or (len(new) and self._prefilter(new).any()):
                    yield from self._pass_after_event(now, period)
                continue
            self.now = now  # a pass on the grid, after the events of its instant
            self._next_pass = math.inf
            yield from self.schedule_pass()

    def _pass_after_event(self, now: float, period: float) -> Generator[I64, I64, None]:
        """The pass an event (or a tick) asks for: at once, or with ``period`` > 0 on the next grid
        point (``_defer_pass``), after Slurm's main scheduler when ``main_at_events``."""
        if period > 0:
            yield from self._main_pass()
            self._defer_pass(now, period)
        else:
            yield from self.schedule_pass()

    def _main_pass(self) -> Generator[I64, I64, None]:
        """With ``main_at_events``: Slurm's main scheduler at the event itself, which starts jobs in
        priority order up to each partition's first blocked job and backfills nothing."""
        if not self.config.main_at_events:
            return
        self._main_only = True
        try:
            yield from self.schedule_pass()
        finally:
            self._main_only = False

    def _defer_pass(self, now: float, period: float) -> None:
        """The pass an event asks for runs at the next point of the ``period`` grid (from the first
        submit), as Slurm's backfill thread starts jobs only when it next wakes up."""
        self._next_pass = min(self._next_pass, math.ceil(now / period - 1e-9) * period)

    def iterate(self) -> Generator[I64, I64, SimResult]:
        """The event loop as a generator: yields pending rows whenever an external controller must
        order them, expects the order to be sent back, and returns the result."""
        yield from self.advance()
        table = self.table
        submit = table.submit
        metrics = summarize(submit, self.start, self.end, table.gpus.astype(np.float64),
                            self.workload.cluster.total_gpus)
        ran = ~np.isnan(self.start)
        metrics["slowdown_mean"] = float(self.slow[ran].mean()) if ran.any() else 1.0
        return SimResult(policy=self.controller.name, start=self.start, end=self.end, slowdown=self.slow,
                         metrics=metrics, stats=dict(self.stats), dropped=self.dropped,
                         reservations=self.reservation_log, allocations=self.alloc_log)


def drive(steps: Generator[I64, I64, R]) -> R:
    """Run one of the engine's generators (``iterate``, ``advance``, ``schedule_pass``) to its end and
    return its value. Only an external controller is asked for an order; for any other that is a bug."""
    try:
        next(steps)
    except StopIteration as done:
        return cast(R, done.value)
    raise RuntimeError("an external controller needs iterate() and an agent to order the queue")


def simulate(workload: Workload, policy: Policy | Controller, config: SimConfig | None = None) -> SimResult:
    """Run ``workload`` under a policy (event mode) or any controller."""
    ctl = policy if isinstance(policy, Controller) else PolicyController(policy)
    return Simulator(workload, ctl, config).run()
