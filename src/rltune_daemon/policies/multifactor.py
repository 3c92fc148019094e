"""Slurm's multifactor priority plugin, as the paper's §5.4 approximates it for GPUs.

priority = w_age*age + w_fs*fairshare + w_size*size + w_part*partition + w_qos*qos, each factor in [0, 1]
and every weight 1000 by default (the paper's "equal contribution"). ``age`` = min(wait / max_age, 1)
(PriorityMaxAge, 7 days). ``size`` follows the paper: the requested run time, shorter is better,
``1 - min(rt / max_time, 1)``; ``size_mode="gpus"`` gives a favour-large factor by GPUs instead, and
``size_mode="slurm"`` Slurm 22.05's own default (``PriorityFavorSmall=NO``, no ``SMALL_RELATIVE_TO_TIME``):
``(nodes / cluster nodes + CPUs / cluster CPUs) / 2``, with a job's CPUs one per requested node when the
job names none (``sbatch -N k`` and no ``-n``/``-c``); ``size_mode="slurm-small"`` is one minus that, its
``PriorityFavorSmall=YES``. ``rltune replay`` and ``rltune site`` build these weights from a cluster's
``scontrol show config``, so the simulator ranks jobs by the formula that cluster uses.
On a live cluster Slurm computes this itself: with no fair-share source the policy uses the priority
the source reports (squeue %Q) when it has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from rltune_daemon.domain.arrays import F64
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.policies.base import Policy


@dataclass(frozen=True)
class MultifactorWeights:
    age: float = 1000.0
    fairshare: float = 1000.0
    job_size: float = 1000.0
    partition: float = 1000.0
    qos: float = 1000.0
    max_age: float = 7 * 86400.0
    max_time: float = 7 * 86400.0
    size_mode: Literal["runtime", "gpus", "slurm", "slurm-small"] = "runtime"


class Multifactor(Policy):
    name = "multifactor"

    def __init__(self, weights: MultifactorWeights | None = None) -> None:
        self.w = weights or MultifactorWeights()

    def priority(self, view: QueueView) -> F64:
        """Slurm-style integer priority (higher first) of each pending job."""
        w = self.w
        table, idx = view.table, view.idx
        age = np.minimum(view.wait / w.max_age, 1.0)
        if w.size_mode == "runtime":
            size = 1.0 - np.minimum(view.requested / w.max_time, 1.0)
        elif w.size_mode == "slurm":
            size = _slurm_job_size(view)
        elif w.size_mode == "slurm-small":
            size = 1.0 - _slurm_job_size(view)
        else:
            total = float(view.cluster.gpus_total.sum()) if view.cluster is not None else 0.0
            size = np.minimum(view.size / total, 1.0) if total > 0 else np.zeros(len(idx))
        fs = (view.fairshare.factors(table.user[idx], view.now) if view.fairshare is not None
              else np.ones(len(idx)))
        part = table.part_factor[idx]
        prio = w.age * age + w.fairshare * fs + w.job_size * size + w.partition * part
        return np.floor(prio)

    def scores(self, view: QueueView) -> F64:
        if view.fairshare is None:
            live = view.table.priority[view.idx]
            if len(live) and not np.isnan(live).any():
                return -live  # Slurm already applied its own multifactor weights
        return -self.priority(view)


def _slurm_job_size(view: QueueView) -> F64:
    """Slurm's default job-size factor: the mean of the node share and the CPU share of the cluster."""
    nodes = np.maximum(view.table.nodes_req[view.idx], 1).astype(np.float64)
    cpus = view.table.cpus[view.idx].astype(np.float64)
    cpus = np.where(cpus > 0, cpus, nodes)
    cl = view.cluster
    if cl is None or cl.n_nodes == 0:
        return np.zeros(len(view.idx))
    return (nodes / cl.n_nodes + cpus / max(float(cl.cpus_total.sum()), 1.0)) / 2.0


def leaves_slurm_order(policy_name: str) -> bool:
    """Whether the daemon running ``policy_name`` with no model writes no SiteFactor: ``multifactor`` is
    Slurm's own order, which Slurm applies itself; the daemon only undoes its own earlier writes (and
    still gives placement hints). The live applier and the simulator's ``daemon:`` policies both ask."""
    return policy_name == "multifactor"
