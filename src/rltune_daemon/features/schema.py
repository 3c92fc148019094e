"""The feature schema: names, order, normalisation and sampling rules, declared as data.

Everything that changes what a model sees is declared here and nowhere else: the computing code reads
its constants (``params``) and transforms (``norm``) from these declarations, and ``SCHEMA_HASH`` hashes
them. A model trained under one hash is therefore refused by a daemon whose features would differ.
Normalisation is fixed (log scales with documented constants), never fitted on data, so simulated and
live inputs map to the same scale. Free-text fields (``source``, ``formula``, ``doc``) are not hashed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from rltune_daemon.domain.history import RunHistory

F64 = npt.NDArray[np.float64]

SCHEMA_VERSION = 1
CLIP_LO, CLIP_HI = -1.0, 5.0  # every normalised value is clipped to this range (NaN becomes 0)


@dataclass(frozen=True)
class Norm:
    """``identity``: ``clip(x)``; ``log1p``: ``clip(log1p(x / scale) / log1p(ref / scale))`` so that
    ``x = ref`` maps to 1 and ``scale`` sets where the log takes over from linear growth."""

    kind: Literal["identity", "log1p"] = "identity"
    scale: float = 1.0
    ref: float = 1.0
    lo: float = CLIP_LO
    hi: float = CLIP_HI

    def apply(self, x: F64) -> F64:
        y = np.log1p(np.maximum(x, 0.0) / self.scale) / np.log1p(self.ref / self.scale) \
            if self.kind == "log1p" else x
        return np.clip(np.nan_to_num(y, nan=0.0, posinf=self.hi, neginf=self.lo), self.lo, self.hi)

    def key(self) -> dict[str, Any]:
        return {"kind": self.kind, "scale": self.scale, "ref": self.ref, "lo": self.lo, "hi": self.hi}


@dataclass(frozen=True)
class FeatureSpec:
    """One column of the raw matrix: natural-unit ``formula`` then ``norm``. ``params`` are the constants
    the formula uses (hashed)."""

    name: str
    source: str
    formula: str
    norm: Norm = field(default_factory=Norm)
    params: tuple[tuple[str, float], ...] = ()

    def key(self) -> dict[str, Any]:
        return {"name": self.name, "norm": self.norm.key(), "params": dict(self.params)}


HOUR, DAY, WEEK = 3600.0, 86400.0, 604800.0
_TIME = Norm("log1p", scale=60.0, ref=WEEK)  # 1 min .. 1 week -> 0 .. 1; 60 days -> 1.23

FEATURES: tuple[FeatureSpec, ...] = (
    FeatureSpec("queue_order", "job ID (metadata)",
                "position of the job in submit order among pending jobs / (n - 1); the id never enters"),
    FeatureSpec("user_share", "user info (metadata)",
                "share of the queue's GPU demand (max(gpus, 1) per job) that belongs to the job's user"),
    FeatureSpec("vc_share", "virtual cluster (metadata; Slurm account)",
                "share of the queue's GPU demand that belongs to the job's account"),
    FeatureSpec("req_gpus", "requested GPUs", "GPUs requested", Norm("log1p", 1.0, 64.0)),
    FeatureSpec("gpu_type_share", "GPU type",
                "GPUs of the types (and partition) the job accepts / all GPUs of the cluster"),
    FeatureSpec("req_time", "requested time", "requested time limit, seconds (never the true runtime)",
                _TIME),
    FeatureSpec("wait", "submit time", "now - submit, seconds (submit time itself is clock-dependent)",
                _TIME),
    FeatureSpec("req_cpus", "req_CPU",
                "CPUs requested, or GPUs x CPUs-per-GPU of the eligible nodes when not given",
                Norm("log1p", 1.0, 256.0)),
    FeatureSpec("req_mem", "req_mem",
                "memory requested (MB), or GPUs x memory-per-GPU of the eligible nodes when not given",
                Norm("log1p", 1024.0, 2048.0 * 1024.0)),
    FeatureSpec("free_nodes", "free_nodes",
                "eligible usable nodes with no running job / eligible usable nodes"),
    FeatureSpec("can_schedule_now", "can_schedule_now",
                "1 if at least k eligible nodes can take one chunk (GPUs, CPUs, memory) now, else 0"),
    FeatureSpec("num_ways_to_schedule", "num_ways_to_schedule",
                "max(fitting nodes - k + 1, 0): fitting nodes for single-node jobs, a non-exploding count of "
                "distinct node sets for k-node jobs", Norm("log1p", 1.0, 64.0)),
    FeatureSpec("demand_supply_ratio", "Demand-Supply Ratio (eq. 1)",
                "gpus / max(free GPUs of accepted types on usable eligible nodes, empty_supply)",
                Norm("log1p", 1.0, 1.0, hi=4.0), (("empty_supply", 0.5),)),
    FeatureSpec("job_size", "Job Size", "requested GPUs x requested seconds (GPU-seconds)",
                Norm("log1p", HOUR, 1e4 * HOUR)),
    FeatureSpec("urgency", "Job Urgency Score",
                "length_weight ln(1 + wait / max(req_time, time_floor)) "
                "+ age_weight ln(1 + wait / age_scale): wait relative to the job's length, aged so long jobs "
                "are not starved",
                Norm(lo=0.0), (("time_floor_s", 600.0), ("age_scale_s", DAY), ("length_weight", 0.5),
                               ("age_weight", 0.5))),
    FeatureSpec("future_availability", "Future Availability (eq. 2)",
                "(free GPUs + GPUs of running jobs whose requested end is within horizon - gpus) / GPUs, "
                "over the usable eligible nodes; -1 with no such node",
                Norm(lo=-1.0, hi=1.0), (("horizon_s", HOUR),)),
    FeatureSpec("cff", "Cluster Fragmentation Factor (eq. 3)",
                "1 - sum(free^2 / gpus) / sum(free) over usable eligible nodes (0 when nothing is free)",
                Norm(lo=0.0, hi=1.0)),
    FeatureSpec("hist_time", "run history (our addition, Helios' QSSF estimate)",
                "mean runtime of the user's last `window` finished runs with the same GPU count, else of "
                "the user's last runs, else of the last `recent` runs of anyone, else the requested time, "
                "seconds", _TIME, (("window", 10.0), ("recent", 200.0))),
)

FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)
INDEX: dict[str, int] = {n: i for i, n in enumerate(FEATURE_NAMES)}
PARAMS: dict[str, dict[str, float]] = {f.name: dict(f.params) for f in FEATURES}


def new_history() -> RunHistory:
    """An empty run history with the ``hist_time`` feature's declared (hashed) parameters."""
    p = PARAMS["hist_time"]
    return RunHistory(int(p["window"]), int(p["recent"]))


@dataclass(frozen=True)
class Slot:
    """One sampled column: ``sum(w * raw[f] for f, w in terms)``, where ``terms`` is ``hi`` when the
    normalised ``cond`` feature is at least ``norm(cond)(threshold)`` (``threshold`` in natural units) and
    ``lo`` otherwise (always ``lo`` when ``cond`` is empty)."""

    name: str
    doc: str
    lo: tuple[tuple[str, float], ...]
    cond: str = ""
    threshold: float = 0.0
    hi: tuple[tuple[str, float], ...] = ()

    def key(self) -> dict[str, Any]:
        return {"name": self.name, "lo": [list(t) for t in self.lo], "cond": self.cond,
                "threshold": self.threshold, "hi": [list(t) for t in self.hi]}


CFF_HIGH = 0.5  # half of the free capacity sits on partly used nodes
MANY_WAYS = 2.0

ACTOR_SLOTS: tuple[Slot, ...] = (
    Slot("lead", "job_size when fragmented (CFF >= 0.5: small/short jobs fill holes), else urgency (age)",
         (("urgency", 1.0),), "cff", CFF_HIGH, (("job_size", 1.0),)),
    Slot("second", "the other one of job_size / urgency, de-emphasised (x0.5)",
         (("job_size", 0.5),), "cff", CFF_HIGH, (("urgency", 0.5),)),
    Slot("wait", "raw wait (what FCFS-like base policies see)", (("wait", 1.0),)),
    Slot("req_time", "raw requested time (what SJF-like base policies see)", (("req_time", 1.0),)),
    Slot("demand", "demand-supply ratio (the engineered form of requested GPUs)",
         (("demand_supply_ratio", 1.0),)),
    Slot("flexibility", "can_schedule_now, plus num_ways_to_schedule when there are >= 2 ways",
         (("can_schedule_now", 1.0),), "num_ways_to_schedule", MANY_WAYS,
         (("can_schedule_now", 1.0), ("num_ways_to_schedule", 1.0))),
    Slot("availability", "future availability", (("future_availability", 1.0),)),
    Slot("fragmentation", "CFF: tells the actor which variant slots lead/second hold", (("cff", 1.0),)),
    Slot("hist_time", "history-estimated duration",
         (("hist_time", 1.0),)),
)

CRITIC_SLOTS: tuple[Slot, ...] = (
    Slot("wait", "wait (submit time)", (("wait", 1.0),)),
    Slot("req_time", "requested time (run time)", (("req_time", 1.0),)),
    Slot("req_gpus", "requested GPUs", (("req_gpus", 1.0),)),
    Slot("can_schedule_now", "can_schedule_now", (("can_schedule_now", 1.0),)),
    Slot("free_nodes", "free nodes", (("free_nodes", 1.0),)),
)

ACTOR_DIM = 9
CRITIC_DIM = 5
assert len(FEATURE_NAMES) == 18 and len(ACTOR_SLOTS) == ACTOR_DIM and len(CRITIC_SLOTS) == CRITIC_DIM


def hashed_part(features: tuple[FeatureSpec, ...] = FEATURES, actor: tuple[Slot, ...] = ACTOR_SLOTS,
                critic: tuple[Slot, ...] = CRITIC_SLOTS) -> dict[str, Any]:
    """The machine-relevant part of a schema (what ``schema_hash`` covers)."""
    return {"version": SCHEMA_VERSION, "clip": [CLIP_LO, CLIP_HI], "features": [f.key() for f in features],
            "actor": [s.key() for s in actor], "critic": [s.key() for s in critic]}


def schema_hash(features: tuple[FeatureSpec, ...] = FEATURES, actor: tuple[Slot, ...] = ACTOR_SLOTS,
                critic: tuple[Slot, ...] = CRITIC_SLOTS) -> str:
    """First 16 hex digits of SHA-256 over the canonical JSON of ``hashed_part``."""
    text = json.dumps(hashed_part(features, actor, critic), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


SCHEMA_HASH: str = schema_hash()

def schema() -> dict[str, Any]:
    """The schema as a JSON-ready dict for the model manifest (hashed part plus descriptions)."""
    return {
        **hashed_part(),
        "hash": SCHEMA_HASH,
        "names": list(FEATURE_NAMES),
        "actor_dim": ACTOR_DIM,
        "critic_dim": CRITIC_DIM,
        "descriptions": {f.name: {"source": f.source, "formula": f.formula} for f in FEATURES},
        "actor_slots": [s.name for s in ACTOR_SLOTS],
        "critic_slots": [s.name for s in CRITIC_SLOTS],
    }
