"""Which jobs a cluster could ever run, decided once at load time so that no loader drops jobs silently.

This asks the simulator's own shape rule (``placement.shapes.job_shapes``: ``k`` nodes each holding
``ceil(g / k)`` GPUs plus its CPU/memory share) instead of restating it, so a job kept here is one the
simulator and the planner can place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rltune_daemon.domain.arrays import I64, B, ClusterArrays, JobTable
from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.jobs import Job
from rltune_daemon.placement.shapes import EligibilityIndex, job_shapes


@dataclass(frozen=True)
class Verdict:
    """``ok[i]`` is True for runnable jobs; ``unknown_type[i]`` marks jobs whose GPU types the cluster
    does not have at all (a separate drop reason)."""

    ok: B
    unknown_type: B


def check(
    cluster: ClusterSpec,
    gpus: I64,
    nodes: I64,
    cpus: I64,
    mem_mb: I64,
    gpu_types: list[tuple[str, ...]],
    partition: list[str],
) -> Verdict:
    cols = zip(gpus.tolist(), nodes.tolist(), cpus.tolist(), mem_mb.tolist(), gpu_types, partition,
               strict=True)
    probes = [
        Job(str(i), 0.0, int(g), 1.0, gpu_types=t, nodes=int(nd), cpus=int(c), mem_mb=int(m), partition=p)
        for i, (g, nd, c, m, t, p) in enumerate(cols)
    ]
    return check_jobs(cluster, probes)


def check_jobs(cluster: ClusterSpec, jobs: Sequence[Job]) -> Verdict:
    """``check`` for jobs already built (only their resources and partition are read)."""
    known = {t.lower() for t in cluster.gpu_types}
    table = JobTable.from_jobs(jobs, cluster)
    shapes = job_shapes(table, EligibilityIndex.build(ClusterArrays.from_spec(cluster)))
    unknown = np.array([bool(j.gpu_types) and not ({x.lower() for x in j.gpu_types} & known) for j in jobs],
                       dtype=np.bool_)
    return Verdict(shapes.feasible & ~unknown, unknown)
