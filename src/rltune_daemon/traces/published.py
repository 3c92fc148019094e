"""Published statistics the generators are fitted to, read from the bundled CSVs (``data/helios``).

Kept apart from the generators so that ``rltune trace fit`` compares against the same numbers the
generator used, and a test can check both against STATS.md.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache

from rltune_daemon.traces.resources import data_text, lines

HELIOS_CLUSTERS = ("venus", "earth", "saturn", "uranus")


@dataclass(frozen=True)
class HeliosProfile:
    """One Helios cluster: GPU-request CDF (by jobs and by GPU time), GPU-job duration CDF at 2^i s,
    hourly GPU-job submissions, and the summary row (means/medians from the full trace)."""

    cluster: str
    gpu_values: tuple[int, ...]
    gpu_cdf_jobs: tuple[float, ...]
    gpu_cdf_gputime: tuple[float, ...]
    dur_seconds: tuple[float, ...]
    dur_cdf: tuple[float, ...]
    hourly_submissions: tuple[float, ...]
    summary: dict[str, float]


# Requests above 64 GPUs (the CDF's "all" bucket) are drawn as this many GPUs, then capped to the VC.
OVER_64_GPUS = 128


@cache
def helios(cluster: str = "venus") -> HeliosProfile:
    name = cluster.capitalize()
    cdf_rows = [
        r for r in csv.DictReader(lines(data_text("helios/helios_cdf_points.csv"))) if r["cluster"] == name
    ]
    if not cdf_rows:
        raise ValueError(f"unknown Helios cluster {cluster!r} (choose {', '.join(HELIOS_CLUSTERS)})")

    def series(metric: str) -> list[tuple[str, float]]:
        return [(r["threshold"], float(r["cdf_pct"])) for r in cdf_rows if r["metric"] == metric]

    jobs = series("gpu_request_cdf_jobs_pct")
    gtime = series("gpu_request_cdf_gputime_pct")
    dur = series("duration_cdf_gpu_jobs_pct")
    hourly = [
        (int(r["hour"]), float(r["value"]))
        for r in csv.DictReader(lines(data_text("helios/helios_diurnal.csv")))
        if r["cluster"] == name and r["metric"] == "hourly_mean_gpu_job_submissions"
    ]
    summary_row = next(
        r for r in csv.DictReader(lines(data_text("helios/helios_cluster_summary.csv"))) if r["id"] == name
    )
    return HeliosProfile(
        cluster=cluster,
        gpu_values=tuple(OVER_64_GPUS if t == "all" else int(t) for t, _ in jobs),
        gpu_cdf_jobs=tuple(p / 100 for _, p in jobs),
        gpu_cdf_gputime=tuple(p / 100 for _, p in gtime),
        dur_seconds=tuple(float(t) for t, _ in dur),
        dur_cdf=tuple(p / 100 for _, p in dur),
        hourly_submissions=tuple(v for _, v in sorted(hourly)),
        summary={k: float(v) for k, v in summary_row.items() if k != "id"},
    )
