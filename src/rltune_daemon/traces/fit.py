"""Generated vs published statistics (``rltune trace fit NAME``): the evidence behind the generators.

Each report is a dict of tables (rows of ``[label, generated, published]``) rendered as markdown for
docs/traces.md; the tests assert the same comparisons within stated tolerances.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64
from rltune_daemon.traces import alibaba, helios, testbed
from rltune_daemon.traces.published import helios as helios_profile
from rltune_daemon.traces.registry import load_workload
from rltune_daemon.traces.sampling import loglinear_inverse_cdf

DURATION_PCTS = (10, 25, 50, 75, 90, 95, 99)
RHO_GRID = tuple(round(0.05 * i, 2) for i in range(19))

Table = dict[str, Any]


def _cols(w: Any) -> tuple[F64, F64, F64]:
    submit = np.array([j.submit for j in w.jobs])
    runtime = np.array([j.runtime for j in w.jobs], dtype=np.float64)
    gpus = np.array([j.gpus for j in w.jobs], dtype=np.float64)
    return submit, runtime, gpus


def helios_report(seed: int = 0, jobs: int = helios.DEFAULT_JOBS, profile: str = "venus") -> dict[str, Any]:
    prof = helios_profile(profile)
    rho = helios.FITTED_RHO[profile]
    w = load_workload("helios", seed=seed, jobs=jobs, profile=profile)
    g_req, dur_raw = helios.sample_sizes(prof, jobs, seed, rho)  # the same draws, before VC capping
    _, runtime, _ = _cols(w)
    gpu_rows = []
    work = g_req * dur_raw
    small = g_req <= 64
    pub_t = np.array(prof.gpu_cdf_gputime[:-1]) / prof.gpu_cdf_gputime[-2]
    for k, value in enumerate(prof.gpu_values[:-1]):
        gen_jobs = 100.0 * np.mean(g_req <= value)
        gen_time = 100.0 * work[small & (g_req <= value)].sum() / work[small].sum()
        gpu_rows.append(
            [
                f"<= {value}",
                round(gen_jobs, 2),
                round(100 * prof.gpu_cdf_jobs[k], 2),
                round(gen_time, 2),
                round(100 * pub_t[k], 2),
            ]
        )
    u = np.array([p / 100 for p in DURATION_PCTS])
    published = loglinear_inverse_cdf(u, prof.dur_seconds, prof.dur_cdf)
    dur_rows = [
        [f"p{p}", round(float(np.percentile(runtime, p)), 1), round(float(v), 1)]
        for p, v in zip(DURATION_PCTS, published, strict=True)
    ]
    dur_rows.append(["mean", round(float(runtime.mean()), 1), prof.summary["avg_run_time_gpu"]])
    dur_rows.append(
        ["median (exact, summary)", round(float(np.median(runtime)), 1), prof.summary["med_run_time_gpu"]]
    )
    # diurnal shape: share of submissions per hour of day
    origin = float(w.meta["origin"])
    hours = ((np.array([j.submit for j in w.jobs]) + origin) % 86400 // 3600).astype(int)
    gen = np.bincount(hours, minlength=24) / len(hours)
    pub = np.array(prof.hourly_submissions) / sum(prof.hourly_submissions)
    diurnal = [[f"{h:02d}", round(100 * float(gen[h]), 2), round(100 * float(pub[h]), 2)] for h in range(24)]
    shape = [
        ["peak hour", int(gen.argmax()), int(pub.argmax())],
        ["trough hour", int(gen.argmin()), int(pub.argmin())],
        ["peak / trough", round(float(gen.max() / gen.min()), 2), round(float(pub.max() / pub.min()), 2)],
    ]
    load_rows = [
        [vc, round(v, 3), w.meta["generator"]["load"]] for vc, v in w.meta["offered_load_by_vc"].items()
    ]
    return {
        "name": "helios",
        "seed": seed,
        "jobs": jobs,
        "profile": profile,
        "rho": rho,
        "command": f"rltune trace fit helios --seed {seed}"
        + ("" if jobs == helios.DEFAULT_JOBS else f" --jobs {jobs}"),
        "tables": {
            "GPU request CDF (% of jobs / % of GPU time, requests <= 64 GPUs)": {
                "header": ["GPUs", "gen jobs %", "pub jobs %", "gen GPU-time %", "pub GPU-time %"],
                "rows": gpu_rows,
            },
            "GPU-job duration (s)": {"header": ["stat", "generated", "published"], "rows": dur_rows},
            "Diurnal shape (submissions by hour of day)": {
                "header": ["", "generated", "published"],
                "rows": shape,
            },
            "Submissions per hour of day (%)": {
                "header": ["hour", "generated", "published"],
                "rows": diurnal,
            },
            "Offered load per VC": {"header": ["VC", "generated", "target"], "rows": load_rows},
        },
    }


def alibaba_report(seed: int = 0, jobs: int = alibaba.DEFAULT_JOBS) -> dict[str, Any]:
    w = load_workload("alibaba", seed=seed, jobs=jobs)
    _, runtime, gpus = _cols(w)
    gen = w.meta["generator"]
    t2_rate = alibaba.TABLE2_RATE * w.cluster.total_gpus / alibaba.FULL_CLUSTER_GPUS
    rows = [
        [
            "mean run (s)",
            round(float(runtime.mean()), 1),
            f"{alibaba.TABLE2_MEAN_RUN} [T2] ({alibaba.TABLE4_MEAN_RUN} [T4])",
        ],
        ["median run (s)", round(float(np.median(runtime)), 1), f"{alibaba.MEDIAN_RUN} [ours]"],
        ["max run (days)", round(float(runtime.max()) / 86400, 2), "<= 30 [T4]"],
        [
            "users",
            len({j.user for j in w.jobs}),
            f"1242 x slice = {round(alibaba.TABLE4_USERS * w.meta['slice'])} [T4, scaled]",
        ],
        [
            "arrival rate (jobs/s)",
            round(gen["rate_per_s"], 6),
            f"{t2_rate:.6f} [T2 rate x slice GPUs / 6742]",
        ],
        ["offered load", round(w.meta["offered_load"], 3), f"{gen['load']} [option load]"],
    ]
    size_rows = [
        [str(v), round(100 * float(np.mean(gpus == v)), 2), round(100 * p, 2)]
        for v, p in zip(alibaba.GPU_VALUES, alibaba.GPU_PROBS, strict=True)
    ]
    type_rows = []
    for types, p in alibaba.CONSTRAINTS:
        share = np.mean([j.gpu_types == types for j in w.jobs])
        type_rows.append(["|".join(types) or "any", round(100 * float(share), 2), round(100 * p, 2)])
    return {
        "name": "alibaba",
        "seed": seed,
        "jobs": jobs,
        "command": f"rltune trace fit alibaba --seed {seed}"
        + ("" if jobs == alibaba.DEFAULT_JOBS else f" --jobs {jobs}"),
        "tables": {
            "Job statistics": {"header": ["stat", "generated", "target [source]"], "rows": rows},
            "GPUs per job (% of jobs)": {"header": ["GPUs", "generated", "model [ours]"], "rows": size_rows},
            "GPU-type constraint (% of jobs)": {
                "header": ["types", "generated", "model [ours]"],
                "rows": type_rows,
            },
        },
    }


def testbed_report(seed: int = 0, jobs: int = testbed.DEFAULT_JOBS) -> dict[str, Any]:
    w = load_workload("testbed", seed=seed, jobs=jobs)
    submit, runtime, gpus = _cols(w)
    span = float(submit[-1] - submit[0])
    rows = [
        ["jobs", len(w.jobs), "1,024 [paper §5.6]"],
        [
            "runtime min / median / max (min)",
            f"{runtime.min() / 60:.1f} / {np.median(runtime) / 60:.1f} / {runtime.max() / 60:.1f}",
            "minutes to ~1 h [brief]",
        ],
        [
            "offered load",
            round(float((gpus * runtime).sum() / (13 * span)), 3),
            f"{testbed.DEFAULT_LOAD} [option load]",
        ],
        ["span (h)", round(span / 3600, 1), ""],
        ["8-GPU jobs (2 P100 nodes)", int(np.count_nonzero(gpus == 8)), ""],
        ["multi-node jobs", sum(1 for j in w.jobs if j.nodes > 1), ""],
        ["pinned to a GPU type", sum(1 for j in w.jobs if j.gpu_types), ""],
    ]
    classes = [
        [k, v, round(100 * p, 1)]
        for (k, p, _, _), v in zip(testbed.CLASSES, w.meta["job_classes"].values(), strict=True)
    ]
    return {
        "name": "testbed",
        "seed": seed,
        "jobs": jobs,
        "command": f"rltune trace fit testbed --seed {seed}",
        "tables": {
            "Workload": {"header": ["stat", "generated", "target"], "rows": rows},
            "Job classes": {"header": ["class", "jobs", "model share %"], "rows": classes},
        },
    }


def report(name: str, seed: int = 0, jobs: int | None = None) -> dict[str, Any]:
    if name == "helios":
        return helios_report(seed, jobs or helios.DEFAULT_JOBS)
    if name == "alibaba":
        return alibaba_report(seed, jobs or alibaba.DEFAULT_JOBS)
    if name == "testbed":
        return testbed_report(seed, jobs or testbed.DEFAULT_JOBS)
    raise ValueError(f"no fit report for {name!r}")


def markdown(rep: dict[str, Any]) -> str:
    out = [f"Produced by `{rep['command']}`:", ""]
    for title, table in rep["tables"].items():
        out.append(f"**{title}**")
        out.append("")
        out.append("| " + " | ".join(table["header"]) + " |")
        out.append("|" + "---|" * len(table["header"]))
        out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in table["rows"]]
        out.append("")
    return "\n".join(out)


def fit_rho(
    profile: str = "venus",
    n: int = 200_000,
    seed: int = 1,
    grid: tuple[float, ...] = RHO_GRID,
) -> tuple[float, float]:
    """Copula rho minimising the squared error of the GPU-time CDF (requests <= 64 GPUs): (rho, error).

    This is how ``helios.FITTED_RHO`` was obtained."""
    prof = helios_profile(profile)
    pub = np.array(prof.gpu_cdf_gputime[:-1]) / prof.gpu_cdf_gputime[-2]
    best = (0.0, float("inf"))
    for rho in grid:
        g, d = helios.sample_sizes(prof, n, seed, rho)
        keep = g <= 64
        work, gk = (g * d)[keep], g[keep]
        cdf = np.array([work[gk <= v].sum() for v in prof.gpu_values[:-1]]) / work.sum()
        err = float(((cdf - pub) ** 2).sum())
        if err < best[1]:
            best = (rho, err)
    return best
