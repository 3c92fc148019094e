"""Randomised variants of a workload: the same jobs on a cluster and under habits other than the trace's.

A model trained on one trace's cluster learns that cluster: its size, its load, how far its users'
requested times are from their run times, how alike a user's runs are. A variant changes each of those
by a factor drawn at random, so a model trained across variants has seen clusters it will not meet
(``rltune train --config`` key ``vary = true``):

* **size**: every group of identical nodes scaled by one factor (fewer nodes queue more), never below
  what the largest job needs;
* **load**: the gaps between submits divided by a factor (a busier or a quieter site);
* **time-limit accuracy**: requested times redrawn from the run times by the user-estimate model with
  drawn parameters (only where the workload's limits come from that model; a trace's own limits are
  real data and stay, raised to the run time where the next change makes it longer);
* **run-time regularity**: each run time multiplied by a mean-one log-normal factor, so that a user's
  past runs tell less about the next one (what ``hist_time`` reads).

A variant is a pure function of the workload and a seed: every policy simulated on one episode (the
actor, the base policy, validation) sees the same cluster and jobs.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from rltune_daemon.domain.cluster import ClusterSpec, NodeSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.traces.estimates import UserEstimateModel, user_limits
from rltune_daemon.traces.feasibility import check_jobs

SIZE = (0.5, 2.0)  # node-count factor (log-uniform)
LOAD = (0.7, 1.4)  # arrival-rate factor (log-uniform)
ESTIMATE_P_MAX = (0.0, 0.3)  # share of jobs that request the longest time allowed
ESTIMATE_MEDIAN = (1.2, 4.0)  # median requested / run time of the others (log-uniform)
ESTIMATE_SIGMA = (0.25, 1.5)  # spread of that ratio (log-normal sigma)
RUNTIME_NOISE = (0.0, 1.0)  # log-normal sigma of the per-job run-time factor


@dataclass(frozen=True)
class Variant:
    size: float
    load: float
    estimates: UserEstimateModel
    runtime_noise: float
    seed: int  # the per-job draws (run-time factors, requested times)

    def describe(self) -> dict[str, float]:
        return {"size": round(self.size, 3), "load": round(self.load, 3),
                "estimate_p_max": round(self.estimates.p_max, 3),
                "estimate_median": round(self.estimates.median_factor, 3),
                "estimate_sigma": round(self.estimates.sigma, 3),
                "runtime_noise": round(self.runtime_noise, 3)}


def _log_uniform(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    lo, hi = lo_hi
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def draw_variant(seed: int, key: int) -> Variant:
    """The variant of episode ``key`` in a run seeded ``seed``."""
    rng = np.random.default_rng([seed, key, 0x7A21])
    return Variant(size=_log_uniform(rng, SIZE), load=_log_uniform(rng, LOAD),
                   estimates=UserEstimateModel(p_max=float(rng.uniform(*ESTIMATE_P_MAX)),
                                               median_factor=_log_uniform(rng, ESTIMATE_MEDIAN),
                                               sigma=float(rng.uniform(*ESTIMATE_SIGMA))),
                   runtime_noise=float(rng.uniform(*RUNTIME_NOISE)), seed=int(rng.integers(2**31)))


def scaled_cluster(cluster: ClusterSpec, factor: float) -> ClusterSpec:
    """Each group of identical nodes (type, GPUs, CPUs, memory, partitions) scaled by ``factor``, at
    least one node each; nodes renamed ``<cluster>-v<i>``, in the original group order."""
    groups = Counter((n.gpu_type, n.gpus, n.cpus, n.mem_mb, n.partitions) for n in cluster.nodes)
    nodes: list[NodeSpec] = []
    for (gpu_type, gpus, cpus, mem_mb, parts), count in groups.items():
        for _ in range(max(1, round(count * factor))):
            nodes.append(NodeSpec(f"{cluster.name}-v{len(nodes)}", gpu_type, gpus, cpus, mem_mb, parts))
    return dataclasses.replace(cluster, nodes=tuple(nodes))


def _fits(cluster: ClusterSpec, workload: Workload) -> bool:
    return bool(check_jobs(cluster, workload.jobs).ok.all())


def apply_variant(workload: Workload, variant: Variant) -> Workload:
    """``workload`` as ``variant`` changes it (module docstring); same job ids and order."""
    jobs = workload.jobs
    if not jobs:
        return workload
    factor = variant.size
    cluster = scaled_cluster(workload.cluster, factor)
    while factor < 1.0 and not _fits(cluster, workload):  # a smaller cluster must still run every job
        factor = min(1.0, factor * 1.25)
        cluster = scaled_cluster(workload.cluster, factor)
    rng = np.random.default_rng([variant.seed, 1])
    s = variant.runtime_noise
    runtime = np.array([j.runtime if j.runtime is not None else j.time_limit for j in jobs], dtype=np.float64)
    runtime = np.maximum(runtime * np.exp(rng.normal(-s * s / 2.0, s, len(jobs))), 1.0)
    limits = np.array([j.time_limit for j in jobs], dtype=np.float64)
    if workload.estimates == "user":
        cap = float(max(limits.max(), runtime.max()))
        limits = user_limits(runtime, variant.seed, cap, variant.estimates)
    elif workload.estimates == "oracle":
        limits = runtime.copy()
    limits = np.maximum(limits, runtime)
    first = jobs[0].submit
    varied = tuple(dataclasses.replace(j, submit=first + (j.submit - first) / variant.load,
                                       runtime=float(r), time_limit=float(t))
                   for j, r, t in zip(jobs, runtime, limits, strict=True))
    return Workload(workload.name, cluster, varied, workload.estimates,
                    {**workload.meta, "variant": {**variant.describe(), "size": round(factor, 3)}})
