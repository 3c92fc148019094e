"""Slurm's own metrics (25.11+, ``MetricsType=metrics/openmetrics``): slurmctld answers HTTP GET
``/metrics/jobs``, ``/metrics/partitions`` and ``/metrics/scheduler`` on its own port.

The daemon reads them for one purpose: a second, independent count of the queue. squeue's pending and
running jobs and slurmctld's own counters come from the same job table at nearly the same moment, so a
read that lists far fewer pending jobs than Slurm counts is incomplete and nothing is written
(``check_counts``), the same rule as every other read check. The counts and the backfill statistics go
into the cycle's log line; they are *not* exported again as the daemon's metrics: Prometheus scrapes
slurmctld itself (``deploy/prometheus/slurmctld.yml``) and the dashboard shows Slurm's series beside the
daemon's.

Where the endpoint is off (an older Slurm, no ``MetricsType``, ``PrivateData`` set: ``slurm.release``
says which) nothing is fetched at all; where it fails anyway (a firewall, a standby controller) the
reason is logged once and the cycle goes on without the cross-check.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from rltune_daemon.slurm.errors import SuspectRead

# scheduler statistics worth a line in the cycle log (µs and jobs, as slurmctld reports them)
BACKFILL = ("slurm_bf_cycle_last", "slurm_bf_last_depth", "slurm_bf_queue_len", "slurm_backfilled_jobs",
            "slurm_schedule_cycle_last")
# a read may list fewer pending jobs than Slurm counted a moment apart: jobs start and end between the
# two; this many, plus the configured share, is churn, anything beyond is a read that missed jobs
SLACK_JOBS = 20


class MetricsUnavailable(Exception):  # noqa: N818 - names the state, like ControllerDown
    """The endpoint did not answer with metrics (the message says why: HTTP status, refused, timeout)."""


@dataclass(frozen=True)
class SlurmCounts:
    """Slurm's own numbers at one moment: jobs pending and running (all partitions, or the configured
    ones) and the backfill scheduler's last pass."""

    pending: int
    running: int
    scheduler: dict[str, float] = field(default_factory=dict)

    def log_fields(self) -> dict[str, float]:
        return {"slurm_pending": self.pending, "slurm_running": self.running, **self.scheduler}


def _get(url: str, timeout: float) -> str:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            body: bytes = resp.read()
    except urllib.error.HTTPError as exc:
        raise MetricsUnavailable(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MetricsUnavailable(f"{url}: {reason}") from None
    return body.decode("utf-8", "replace")


def _samples(text: str, url: str) -> Iterable[tuple[str, dict[str, str], float]]:
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                yield s.name, s.labels, float(s.value)
    except ValueError as exc:
        raise MetricsUnavailable(f"{url}: not metrics ({exc})") from None


def fetch_counts(base_url: str, partitions: Sequence[str] = (), timeout: float = 5.0) -> SlurmCounts:
    """Pending and running jobs (per configured partition when ``partitions``) and the backfill
    statistics from slurmctld's endpoint at ``base_url`` (``http://host:port``)."""
    wanted = set(partitions)
    pending = running = 0
    if wanted:
        url = f"{base_url}/metrics/partitions"
        for name, labels, value in _samples(_get(url, timeout), url):
            if labels.get("partition") in wanted:
                pending += int(value) if name == "slurm_partition_jobs_pending" else 0
                running += int(value) if name == "slurm_partition_jobs_running" else 0
    else:
        url = f"{base_url}/metrics/jobs"
        values = {name: value for name, labels, value in _samples(_get(url, timeout), url) if not labels}
        if "slurm_jobs_pending" not in values:
            raise MetricsUnavailable(f"{url}: no slurm_jobs_pending")
        pending, running = int(values["slurm_jobs_pending"]), int(values.get("slurm_jobs_running", 0))
    url = f"{base_url}/metrics/scheduler"
    sched = {name: value for name, labels, value in _samples(_get(url, timeout), url)
             if not labels and name in BACKFILL}
    return SlurmCounts(pending, running, sched)


def check_counts(read_pending: int, counts: SlurmCounts, max_drop_share: float) -> None:
    """``SuspectRead`` when the read listed far fewer pending jobs than Slurm counts (see module doc).
    ``read_pending`` counts each task of an unsplit array, as slurmctld does."""
    floor = (1.0 - max_drop_share) * counts.pending - SLACK_JOBS
    if read_pending < floor:
        raise SuspectRead("metrics", f"squeue listed {read_pending} pending job(s), slurmctld's own "
                                     f"metrics count {counts.pending}")
