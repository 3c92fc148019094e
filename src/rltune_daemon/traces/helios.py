"""SenseTime Helios (SC'21): a seeded generator fitted to the published statistics.

The job-level Helios log could not be obtained (see data/helios/NOTICE.md), so jobs are generated:

* GPUs per job: inverse CDF of the published GPU-request CDF of one Helios cluster (default Venus,
  whose VC sizes the RLTune paper's 16/12/10/8/8-node VCs come from), mass between published points
  put on the upper point (requests between powers of two are rare), ">64" drawn as 128; then capped
  to the job's VC.
* Duration: inverse CDF of the published GPU-job duration CDF (points at 2^i s), log-linear in time
  between points. GPU count and duration are joined by a Gaussian copula with correlation ``rho``
  (fitted so that the share of GPU *time* per request size matches the published GPU-time CDF; big
  jobs run longer) without changing either marginal.
* Arrivals: a non-homogeneous Poisson process whose hourly intensity follows the published mean
  submissions per hour of day, at mean rate ``load * sum(C_v) / mean(capped GPU-seconds per job)``
  (C_v a VC's GPUs), so that the cluster sees offered load ``load`` (GPU-seconds demanded /
  GPU-seconds available).
* VC fit (option ``vc_fit``): ``half`` (default) sends a job only to VCs at least twice its size (the
  largest VC for jobs bigger than half of every VC, capped at half of it: 64 GPUs); ``whole`` sends
  it anywhere and caps it to its VC's GPUs. With ``whole``, jobs as large as a whole VC make the VC
  drain before they start, which dominates FCFS waiting; ``half`` models tenants whose VC is sized
  for their largest jobs.
* VC per job, so that *each* VC's realised load is close to ``load`` (``assign_vcs``): the heaviest
  2 % of jobs (~80 % of all GPU time; a few multi-week 64-GPU jobs) and the jobs that fit a single VC
  are placed greedily on the eligible VC whose load relative to its size stays lowest; the others
  draw their VC with probability proportional to the GPU-seconds it still lacks (plain ``C_v``
  corrected for capping when no job is bound to one VC). With ``half`` the jobs over 48 GPUs fit only
  vc1 and may carry more than its share of the GPU time: then the biggest of them go to vc2, capped
  at 48 GPUs (``vc_overflow``: 0 or 1 job of 20,000 at seeds 0-19).
* Users: ``users`` in all, spread over VCs by size (at least 2 each); within a VC, job ownership
  follows a Zipf law (P(k-th user) ~ 1/k): a few heavy users dominate, as in every cluster log.

Cluster: 5 VCs (partitions ``vc1``..``vc5``) of 16/12/10/8/8 nodes x 8 V100, 48 CPUs, 376,000 MB
(the Helios node: 2 x Xeon Gold 6146, 8 x V100-SXM2, 376 GB).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, B
from rltune_daemon.domain.cluster import ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.traces.assemble import RawJobs, assemble
from rltune_daemon.traces.context import LoadContext
from rltune_daemon.traces.options import MAX_JOBS, MAX_USERS
from rltune_daemon.traces.published import HELIOS_CLUSTERS, HeliosProfile, helios
from rltune_daemon.traces.sampling import (
    correlated_uniforms,
    discrete_from_cdf,
    diurnal_arrivals,
    loglinear_inverse_cdf,
    rng_for,
    zipf_choice,
)

VCS: tuple[tuple[str, int], ...] = (("vc1", 16), ("vc2", 12), ("vc3", 10), ("vc4", 8), ("vc5", 8))
GPU_TYPE = "v100"
NODE_GPUS, NODE_CPUS, NODE_MEM_MB = 8, 48, 376_000
DEFAULT_JOBS = 20_000
DEFAULT_LOAD = 0.75
DEFAULT_USERS = 50
HEAVY_SHARE = 0.02
# Copula correlation per profile from ``traces.fit.fit_rho`` (least squares on the published GPU-time
# CDF of requests <= 64 GPUs, 0.05 grid); see docs/traces.md.
FITTED_RHO = {"venus": 0.15, "earth": 0.30, "saturn": 0.25, "uranus": 0.25}


def cluster() -> ClusterSpec:
    nodes = tuple(
        NodeSpec(f"{vc}-{i:02d}", GPU_TYPE, NODE_GPUS, NODE_CPUS, NODE_MEM_MB, (vc,))
        for vc, count in VCS
        for i in range(1, count + 1)
    )
    return ClusterSpec(
        "helios",
        nodes,
        tuple(PartitionSpec(vc) for vc, _ in VCS),
        notes="RLTune §4.2: Helios VC1-VC5 of 16/12/10/8/8 nodes x 8 V100",
    )


def sample_sizes(profile: HeliosProfile, n: int, seed: int, rho: float) -> tuple[I64, F64]:
    """Uncapped GPU counts and durations (s, whole seconds >= 1)."""
    u_g, u_d = correlated_uniforms(rng_for(seed, "helios/sizes"), n, rho)
    gpus = discrete_from_cdf(u_g, profile.gpu_values, profile.gpu_cdf_jobs)
    dur = loglinear_inverse_cdf(u_d, profile.dur_seconds, profile.dur_cdf)
    return gpus, np.maximum(np.round(dur), 1.0)


def eligible_vcs(g_raw: I64, limit: I64, vc_fit: str) -> B:
    """Jobs x VCs: where a job may go without overflow. ``whole``: every VC (the job is capped to it);
    ``half``: the VCs at least twice its size, the largest VC for jobs bigger than half of every VC."""
    if vc_fit == "whole":
        return np.ones((len(g_raw), len(limit)), dtype=np.bool_)
    eligible: B = limit[None, :] >= g_raw[:, None]
    eligible[~eligible.any(axis=1)] = limit == limit.max()
    return eligible


def _place_fixed(vc: I64, work: F64, caps: I64, limit: I64, eligible: B, fixed: I64, level: float) -> I64:
    """Place the ``fixed`` jobs one at a time on the eligible VC whose load relative to its size stays
    lowest: first the jobs with a single eligible VC, smallest first, then the others by fewest
    eligible VCs and largest first (longest-processing-time balancing). A job that would push even
    that VC above ``level`` (the GPU-seconds per GPU every VC should end at) goes instead to the
    largest other VC that stays at or below it, capped at that VC's limit: an overflow, which never
    happens with ``vc_fit=whole`` (every VC is eligible); single-VC jobs go smallest first so that as
    few jobs as possible overflow. ``vc`` already holds the other jobs' VCs; ``work[j, v]`` is job
    j's GPU-seconds on VC v."""
    out = vc.copy()
    rest = np.ones(len(vc), dtype=np.bool_)
    rest[fixed] = False
    assigned = np.array([float(work[rest & (vc == v), v].sum()) for v in range(len(caps))])

    def key(j: int) -> tuple[int, float]:
        k, size = int(eligible[j].sum()), float(work[j].max())
        return (k, size if k == 1 else -size)

    order = sorted(fixed.tolist(), key=key)
    for j in order:
        after = (assigned + work[j]) / caps
        v = int(np.argmin(np.where(eligible[j], after, np.inf)))
        room = ~eligible[j] & (after <= level)
        if after[v] > level and room.any():
            v = int(np.argmax(np.where(room, limit, -1)))
        out[j] = v
        assigned[v] += work[j, v]
    return out


def assign_vcs(g_raw: I64, dur: F64, seed: int, vc_fit: str = "half") -> tuple[I64, I64]:
    """VC per job and the per-VC cap on GPUs, such that every VC's offered load ends near the same
    level (see module docstring).

    The jobs with a single eligible VC and the heaviest ``HEAVY_SHARE`` (~80 % of the GPU time) are
    placed by ``_place_fixed``. Every other job draws its VC among its eligible ones with probability
    proportional to ``R_v / m_v``: ``R_v`` the GPU-seconds VC v lacks, at the common level, after the
    single-VC jobs (``C_v`` x level when there are none, as with ``whole``), ``m_v`` the mean
    GPU-seconds of a job capped to it. Left to chance, a few multi-week jobs would decide which VC is
    overloaded, and with ``half`` the jobs that fit only the largest VC would overload it."""
    caps = np.array([c * NODE_GPUS for _, c in VCS], dtype=np.int64)
    limit = caps if vc_fit == "whole" else caps // 2
    work = np.minimum(g_raw[:, None], limit[None, :]) * dur[:, None]
    eligible = eligible_vcs(g_raw, limit, vc_fit)
    level = float(np.where(eligible, work, 0.0).max(axis=1).sum() / caps.sum())
    single = eligible.sum(axis=1) == 1
    forced = np.array([float(work[single & eligible[:, v], v].sum()) for v in range(len(caps))])
    lacking = np.maximum(level * caps - forced, 0.0)
    w = np.where(eligible, (lacking / work.mean(axis=0))[None, :], 0.0)
    stuck = w.sum(axis=1) == 0  # every eligible VC already full: any of them
    w[stuck] = eligible[stuck]
    cum = np.cumsum(w, axis=1) / w.sum(axis=1, keepdims=True)
    u = rng_for(seed, "helios/vc").random(len(g_raw))
    vc = np.minimum((u[:, None] > cum).sum(axis=1), len(caps) - 1).astype(np.int64)
    heavy = np.argsort(-(g_raw * dur), kind="stable")[: int(HEAVY_SHARE * len(g_raw))]
    fixed = np.union1d(heavy, np.flatnonzero(single)).astype(np.int64)
    return _place_fixed(vc, work, caps, limit, eligible, fixed, level), limit


def generate(
    n: int = DEFAULT_JOBS,
    seed: int = 0,
    load: float = DEFAULT_LOAD,
    profile: str = "venus",
    rho: float | None = None,
    users: int = DEFAULT_USERS,
    vc_fit: str = "half",
) -> tuple[RawJobs, dict[str, Any]]:
    prof = helios(profile)
    r = FITTED_RHO[profile] if rho is None else rho
    g_raw, dur = sample_sizes(prof, n, seed, r)
    caps = np.array([c * NODE_GPUS for _, c in VCS], dtype=np.int64)
    vc, limit = assign_vcs(g_raw, dur, seed, vc_fit)
    gpus = np.minimum(g_raw, limit[vc])
    overflow = int(np.count_nonzero(~eligible_vcs(g_raw, limit, vc_fit)[np.arange(n), vc]))
    rate = load * float(caps.sum()) / float(np.mean(gpus * dur))
    submit = diurnal_arrivals(rng_for(seed, "helios/arrivals"), n, rate, prof.hourly_submissions)
    names = [v for v, _ in VCS]
    user_rng = rng_for(seed, "helios/users")
    user_of = np.empty(n, dtype=np.int64)
    per_vc = [max(2, round(users * c / caps.sum())) for c in caps]
    for v, k in enumerate(per_vc):
        rows = np.flatnonzero(vc == v)
        user_of[rows] = zipf_choice(user_rng, len(rows), k)
    vcs = [names[v] for v in vc.tolist()]
    raw = RawJobs(
        ids=[f"helios-{i:05d}" for i in range(1, n + 1)],
        submit=submit,
        runtime=dur,
        gpus=gpus,
        user=[f"{v}-u{u + 1:02d}" for v, u in zip(vcs, user_of.tolist(), strict=True)],
        account=vcs,
        partition=vcs,
        notes={"gpus_capped_to_vc": int(np.count_nonzero(gpus < g_raw)), "vc_overflow": overflow},
    )
    span = float(submit[-1] - submit[0]) if n > 1 else 0.0
    realised = {
        names[v]: float((gpus[vc == v] * dur[vc == v]).sum() / (caps[v] * span)) if span else 0.0
        for v in range(len(VCS))
    }
    meta = {
        "generator": {
            "profile": profile,
            "jobs": n,
            "load": load,
            "rho": r,
            "vc_fit": vc_fit,
            "users": users,
            "rate_per_s": rate,
            "users_per_vc": dict(zip(names, per_vc, strict=True)),
        },
        "offered_load_by_vc": realised,
    }
    return raw, meta


def load(ctx: LoadContext) -> Workload:
    n = ctx.opts.integer("jobs", DEFAULT_JOBS, lo=1, hi=MAX_JOBS)
    target = ctx.opts.number("load", DEFAULT_LOAD, lo=1e-3, hi=10.0)
    profile = ctx.opts.choice("profile", "venus", HELIOS_CLUSTERS)
    rho = ctx.opts.number("rho", math.nan, lo=-0.99, hi=0.99)
    users = ctx.opts.integer("users", DEFAULT_USERS, lo=1, hi=MAX_USERS)
    vc_fit = ctx.opts.choice("vc_fit", "half", ("whole", "half"))
    cap = ctx.opts.seconds("max_time", ctx.default_cap)
    ctx.opts.finish()
    raw, meta = generate(n, ctx.seed, target, profile, None if math.isnan(rho) else rho, users, vc_fit)
    spec = ctx.cluster or cluster()
    raw = ctx.partitions(raw, spec)
    return assemble(
        "helios",
        spec,
        raw,
        estimates=ctx.estimates(raw, "helios"),
        seed=ctx.seed,
        cap=cap,
        meta={"source": "generated", **meta},
    )
