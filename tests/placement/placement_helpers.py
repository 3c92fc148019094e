"""Builders for placement tests: a ``PlacementContext`` from node specs, running allocations and pending
jobs, a hypothesis strategy for small random instances, and an independent brute-force optimum."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st

from rltune_daemon.domain.arrays import ClusterArrays, JobTable
from rltune_daemon.domain.cluster import ClusterSpec, NodeSpec
from rltune_daemon.domain.effects import EffectsConfig
from rltune_daemon.domain.jobs import Job
from rltune_daemon.domain.snapshot import NodeAlloc, NodeState, RunningJob
from rltune_daemon.placement.allocate import Allocation, fits, live_view
from rltune_daemon.placement.context import PlacementContext
from rltune_daemon.placement.milp import Problem, evaluate
from rltune_daemon.placement.shapes import EligibilityIndex, job_shapes

Used = tuple[str, int, int, int]  # node, GPUs, CPUs, memory taken by a running job


def context(nodes: Sequence[NodeSpec], used: Sequence[Used], jobs: Sequence[Job],
            effects: EffectsConfig | None = None) -> PlacementContext:
    spec = ClusterSpec("t", tuple(nodes))
    taken = {n.name: [0, 0, 0] for n in nodes}
    running = []
    for k, (node, g, c, m) in enumerate(used):
        for i, v in enumerate((g, c, m)):
            taken[node][i] += v
        running.append(RunningJob(Job(f"r{k}", 0.0, g, 3600.0), 0.0, 3600.0, (NodeAlloc(node, g, c, m),)))
    states = [NodeState(name=n.name, gpu_type=n.gpu_type, gpus=n.gpus, gpus_alloc=taken[n.name][0],
                        cpus=n.cpus, cpus_alloc=taken[n.name][1], mem_mb=n.mem_mb,
                        mem_alloc_mb=taken[n.name][2])
              for n in nodes]
    cl = ClusterArrays.from_state(spec, states, running)
    table = JobTable.from_jobs(list(jobs), spec)
    elig = EligibilityIndex.build(cl)
    return PlacementContext(table, job_shapes(table, elig), cl, elig, effects or EffectsConfig())


def startable(ctx: PlacementContext) -> np.ndarray:
    """Rows that fit now on their own, in table order (= rank order in these tests)."""
    free = live_view(ctx.cluster)
    rows = [r for r in range(len(ctx.table)) if ctx.shapes.feasible[r]
            and fits(ctx.cluster, ctx.elig, ctx.shapes, r, free)]
    return np.array(rows, dtype=np.int64)


@st.composite
def instances(draw: st.DrawFn, max_jobs: int = 4, max_nodes: int = 4) -> PlacementContext:
    n_nodes = draw(st.integers(1, max_nodes))
    nodes, used = [], []
    for i in range(n_nodes):
        g = draw(st.sampled_from([2, 4, 8]))
        node = NodeSpec(f"n{i}", draw(st.sampled_from(["a", "b"])), g, 4 * g, 1000 * g)
        nodes.append(node)
        busy = draw(st.integers(0, g))
        if busy:
            used.append((node.name, busy, draw(st.integers(1, 4 * busy)), 1000 * busy))
    jobs = []
    for k in range(draw(st.integers(1, max_jobs))):
        jobs.append(Job(f"j{k}", float(k), draw(st.sampled_from([1, 1, 2, 3, 4, 6, 8])),
                        draw(st.sampled_from([60.0, 3600.0, 86400.0, 2e6])),
                        gpu_types=draw(st.sampled_from([(), (), ("a",), ("b",)])),
                        cpus=draw(st.sampled_from([0, 0, 0, 2, 12]))))
    fx = draw(st.sampled_from([EffectsConfig(), EffectsConfig.pure(), EffectsConfig(0.5, 0.2)]))
    return context(nodes, used, jobs, fx)


def brute_force(problem: Problem) -> tuple[float, list[int]]:
    """Best objective over every selection (at most one option per job) and one selection reaching it."""
    per_job: dict[int, list[int | None]] = {}
    for i, o in enumerate(problem.options):
        per_job.setdefault(o.job, [None]).append(i)
    best, arg = -np.inf, []
    for combo in itertools.product(*per_job.values()):
        chosen = [i for i in combo if i is not None]
        value = evaluate(problem, chosen)
        if value is not None and value > best:
            best, arg = value, chosen
    return float(best), arg


def check_jointly_feasible(ctx: PlacementContext, allocations: dict[int, Allocation]) -> None:
    """Written independently of ``placement.verify``: per-node sums and per-job validity."""
    cl, table = ctx.cluster, ctx.table
    gpus = np.zeros(cl.n_nodes, dtype=np.int64)
    cpus = np.zeros(cl.n_nodes, dtype=np.int64)
    mem = np.zeros(cl.n_nodes, dtype=np.int64)
    for row, a in allocations.items():
        assert int(a.gpus.sum()) == int(table.gpus[row])
        assert len(set(a.nodes.tolist())) == len(a.nodes) == int(ctx.shapes.k[row])
        mask = int(table.type_mask[row])
        for n in a.nodes:
            assert mask >> int(cl.gpu_type[n]) & 1, "node of a type the job does not accept"
        for n, g, c, m in zip(a.nodes, a.gpus, a.cpus, a.mem, strict=True):
            gpus[n] += g
            cpus[n] += c
            mem[n] += m
    assert (gpus <= cl.gpus_free).all() and (cpus <= cl.cpus_free).all() and (mem <= cl.mem_free).all()
