"""Builders for feature tests: a hand-made snapshot whose expected features are worked out by hand, and
a hypothesis strategy for arbitrary queues and cluster states (built through the live-data seam,
``ClusterArrays.from_state``, the path the daemon uses)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st

from rltune_daemon.domain.arrays import ClusterArrays, JobTable
from rltune_daemon.domain.cluster import ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.domain.jobs import Job
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.domain.snapshot import NodeAlloc, NodeState, RunningJob

NOW = 1_000_000.0


def view_of(nodes: Sequence[NodeSpec], allocs: Sequence[tuple[str, int, int, int, float]],
            pending: Sequence[Job], usable: Sequence[bool] | None = None,
            partitions: tuple[PartitionSpec, ...] = (PartitionSpec("default"),)) -> QueueView:
    """A QueueView over ``pending`` with running jobs ``allocs`` = (node, gpus, cpus, mem, est_end)."""
    spec = ClusterSpec("t", tuple(nodes), partitions)
    used: dict[str, list[int]] = {n.name: [0, 0, 0] for n in nodes}
    running = []
    for k, (node, g, c, m, end) in enumerate(allocs):
        used[node][0] += g
        used[node][1] += c
        used[node][2] += m
        job = Job(f"r{k}", 0.0, g, 3600.0)
        running.append(RunningJob(job, 0.0, end, (NodeAlloc(node, g, c, m),)))
    ok = usable if usable is not None else [True] * len(nodes)
    states = [NodeState(name=n.name, gpu_type=n.gpu_type, gpus=n.gpus, gpus_alloc=used[n.name][0],
                        cpus=n.cpus, cpus_alloc=used[n.name][1], mem_mb=n.mem_mb,
                        mem_alloc_mb=used[n.name][2], partitions=n.partitions, state="mixed", usable=u)
              for n, u in zip(nodes, ok, strict=True)]
    cl = ClusterArrays.from_state(spec, states, running)
    table = JobTable.from_jobs(list(pending), spec)
    return QueueView(table, np.arange(len(pending), dtype=np.int64), NOW, cl)


@st.composite
def random_views(draw: st.DrawFn) -> QueueView:
    n_nodes = draw(st.integers(1, 10))
    two_parts = draw(st.booleans())
    parts = (PartitionSpec("p0"), PartitionSpec("p1")) if two_parts else (PartitionSpec("p0"),)
    nodes = []
    for i in range(n_nodes):
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        part = ("p0", "p1")[draw(st.integers(0, len(parts) - 1))]
        kind = draw(st.sampled_from(["a", "b"]))
        nodes.append(NodeSpec(f"n{i}", kind, gpus, gpus * draw(st.integers(1, 8)),
                              gpus * draw(st.integers(1, 64)) * 1000, (part,)))
    allocs = []
    for n in nodes:
        if draw(st.booleans()):
            g = draw(st.integers(0, n.gpus))
            allocs.append((n.name, g, draw(st.integers(0, n.cpus)), draw(st.integers(0, n.mem_mb)),
                           NOW + draw(st.floats(-1e5, 1e7))))
    usable = [draw(st.integers(0, 3)) > 0 for _ in nodes]
    n_jobs = draw(st.integers(1, 30))
    jobs = []
    for k in range(n_jobs):
        jobs.append(Job(
            f"j{k}", NOW - draw(st.floats(-1e4, 1e8)), draw(st.integers(0, 40)), draw(st.floats(1.0, 1e8)),
            gpu_types=tuple(draw(st.sets(st.sampled_from(["a", "b", "c"]), max_size=2))),
            nodes=draw(st.integers(0, 3)), cpus=draw(st.sampled_from([0, 0, 1, 7, 64])),
            mem_mb=draw(st.sampled_from([0, 0, 100, 100000])), user=draw(st.sampled_from(["u", "v", "w"])),
            partition=("p0", "p1")[draw(st.integers(0, len(parts) - 1))],
        ))
    return view_of(nodes, allocs, jobs, usable, parts)
