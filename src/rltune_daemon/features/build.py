"""Compute the 17 raw features of paper Table 3 and ``hist_time`` from a ``QueueView``, then sample
actor/critic vectors.

The same function runs on the simulator's arrays and on a live Slurm snapshot converted to arrays; it
sees requested times and the runs that already finished (``view.history``) only: ``JobTable.runtime``
of the queued jobs is never read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rltune_daemon.domain.arrays import F64
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.features.groups import fitting_nodes, group_stats, pending_shapes
from rltune_daemon.features.sampling import F32, sample
from rltune_daemon.features.schema import ACTOR_SLOTS, CRITIC_SLOTS, FEATURE_NAMES, FEATURES, PARAMS
from rltune_daemon.placement.shapes import EligibilityIndex


@dataclass(frozen=True)
class FeatureSet:
    """``raw``: n x 18 normalised features (``FEATURE_NAMES`` order); ``actor``: n x 9; ``critic``: n x 5."""

    raw: F32
    actor: F32
    critic: F32


def _share(codes: npt.NDArray[np.int64], weight: F64) -> F64:
    total = float(weight.sum())
    if total <= 0:
        return np.zeros(len(codes))
    per = np.bincount(codes, weights=weight)
    return np.asarray(per[codes] / total, dtype=np.float64)


def natural_features(view: QueueView, elig: EligibilityIndex | None = None) -> F64:
    """n x 18 features in natural units (before normalisation). ``elig`` may be passed to reuse a cache."""
    cl = view.cluster
    if cl is None:
        raise ValueError("features need the cluster state: QueueView.cluster is None")
    table, idx = view.table, view.idx
    n = len(idx)
    out = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float64)
    if n == 0:
        return out
    elig_index = elig if elig is not None and elig.cluster is cl else EligibilityIndex.build(cl)
    sh = pending_shapes(table, idx, elig_index)
    stats = group_stats(cl, sh.elig, view.now, PARAMS["future_availability"]["horizon_s"])
    grp = sh.group
    g = table.gpus[idx].astype(np.float64)
    t = view.requested
    w = view.wait
    demand = np.maximum(g, 1.0)

    position = view.age_places.astype(np.float64)
    cpus = np.where(table.cpus[idx] > 0, table.cpus[idx].astype(np.float64),
                    np.where(g > 0, g * stats.cpus_per_gpu[grp], sh.k.astype(np.float64)))
    mem = np.where(table.mem_mb[idx] > 0, table.mem_mb[idx].astype(np.float64), g * stats.mem_per_gpu[grp])
    fitting = fitting_nodes(cl, sh)
    total_cluster = float(cl.gpus_total.sum())
    free = stats.free[grp]
    gpus_elig = stats.gpus[grp]
    urg = PARAMS["urgency"]
    fsum = stats.free
    cff_group = np.where(fsum > 0, 1.0 - stats.free_sq / np.maximum(fsum, 1e-12), 0.0)

    cols = {
        "queue_order": position / max(n - 1, 1),
        "user_share": _share(table.user[idx], demand),
        "vc_share": _share(table.account[idx], demand),
        "req_gpus": g,
        "gpu_type_share": stats.capacity[grp] / total_cluster if total_cluster > 0 else np.zeros(n),
        "req_time": t,
        "wait": w,
        "req_cpus": cpus,
        "req_mem": mem,
        "free_nodes": stats.idle_nodes[grp] / np.maximum(stats.nodes[grp], 1.0),
        "can_schedule_now": (fitting >= sh.k).astype(np.float64),
        "num_ways_to_schedule": np.maximum(fitting - sh.k + 1, 0).astype(np.float64),
        "demand_supply_ratio": g / np.maximum(free, PARAMS["demand_supply_ratio"]["empty_supply"]),
        "job_size": g * t,
        "urgency": urg["length_weight"] * np.log1p(w / np.maximum(t, urg["time_floor_s"]))
        + urg["age_weight"] * np.log1p(w / urg["age_scale_s"]),
        "future_availability": np.where(
            gpus_elig > 0, (free + stats.released[grp] - g) / np.maximum(gpus_elig, 1.0), -1.0),
        "cff": cff_group[grp],
        "hist_time": t if view.history is None else view.history.predict_rows(table, idx, t),
    }
    for j, name in enumerate(FEATURE_NAMES):
        out[:, j] = cols[name]
    return out


def normalise(natural: F64) -> F32:
    """Apply each feature's declared normalisation (and the global clip) column by column."""
    out = np.empty(natural.shape, dtype=np.float32)
    for j, spec in enumerate(FEATURES):
        out[:, j] = spec.norm.apply(natural[:, j])
    return out


def raw_features(view: QueueView) -> F32:
    """n x 18 normalised features, rows in ``view.idx`` order."""
    return normalise(natural_features(view))


def actor_features(view: QueueView) -> F32:
    """n x 9 actor observation (``ACTOR_SLOTS``)."""
    return sample(raw_features(view), ACTOR_SLOTS)


def critic_features(view: QueueView) -> F32:
    """n x 5 critic input (``CRITIC_SLOTS``)."""
    return sample(raw_features(view), CRITIC_SLOTS)


def build(view: QueueView, elig: EligibilityIndex | None = None) -> FeatureSet:
    """Raw, actor and critic matrices computed from one pass over the queue and cluster."""
    raw = normalise(natural_features(view, elig))
    return FeatureSet(raw, sample(raw, ACTOR_SLOTS), sample(raw, CRITIC_SLOTS))
