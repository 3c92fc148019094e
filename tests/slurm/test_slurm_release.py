"""Which Slurm this is and what follows (``slurm.release``), and Slurm's own metrics as a second count
of the queue (``slurm.openmetrics``): on each captured release's ``scontrol show config`` and metrics
endpoint outputs, served from a local HTTP server where a release has them."""

from __future__ import annotations

import http.server
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rltune_daemon.policies.slurm_priority import cluster_weights
from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.config import load_config
from rltune_daemon.slurm.errors import SuspectRead
from rltune_daemon.slurm.localcluster import LocalCluster
from rltune_daemon.slurm.openmetrics import MetricsUnavailable, SlurmCounts, check_counts, fetch_counts
from rltune_daemon.slurm.parse import parse_squeue_jobs
from rltune_daemon.slurm.release import OPENMETRICS, SlurmRelease, parse_version
from slurm_fixtures import SlurmTestCluster, require_release


def test_each_release_reads_its_version_and_what_it_implies(captured: Path) -> None:
    release = SlurmRelease.from_config((captured / "show_config.txt").read_text())
    assert release.version is not None and release.series == captured.name.removeprefix("captured-").replace(
        "captured", "22.05")
    assert release.multifactor and not release.rate_limit.enabled
    assert release.controller.startswith("127.0.0.1:")
    lines = release.implications()
    assert any("SiteFactor updates reorder" in ln for ln in lines)
    assert release.pyslurm_possible == (release.series == "25.11")
    assert release.openmetrics == (captured / "metrics_jobs.txt").exists()  # captured with MetricsType on


def test_what_a_release_implies_in_the_cases_sites_have() -> None:
    base = ("SLURM_VERSION = {v}\nPriorityType = {p}\nSlurmctldParameters = {c}\nMetricsType = {m}\n"
            "PrivateData = {d}\nSlurmctldHost[0] = ctl(10.0.0.1)\nSlurmctldPort = 6817-6820\n"
            "SlurmUser = slurm(64030)\n")

    def rel(v: str = "25.11.1", p: str = "priority/multifactor", c: str = "(null)", m: str = "(null)",
            d: str = "none") -> SlurmRelease:
        return SlurmRelease.from_config(base.format(v=v, p=p, c=c, m=m, d=d), uid=1000)

    old = rel("22.05.8", c="rl_enable")
    assert old.rate_limit.enabled and old.rate_limit.applies and not old.rate_limit_enforced
    assert any("not enforced before 23.02" in ln for ln in old.implications())
    assert rel("23.11.4", c="rl_enable").rate_limit_enforced
    basic = rel("23.02.7", p="priority/basic")
    assert not basic.multifactor and any("SiteFactor updates change nothing" in ln
                                         and "default from 23.11" in ln for ln in basic.implications())
    on = rel(m="metrics/openmetrics")
    assert on.metrics_url == "http://10.0.0.1:6817"
    private = rel(m="metrics/openmetrics", d="jobs")
    assert not private.openmetrics
    assert any("PrivateData=jobs disables it" in ln for ln in private.implications())
    assert not rel("24.11.7", m="metrics/openmetrics").openmetrics  # the plugin arrived in 25.11
    assert SlurmRelease.from_config("").version is None and SlurmRelease.from_config("").series == "unknown"
    assert parse_version("slurm 23.11.11") == (23, 11, 11)


@pytest.fixture
def endpoint(captured: Path) -> Iterator[str]:
    """slurmctld's metrics endpoint as captured, on a local port (404 for paths it does not have)."""
    if not (captured / "metrics_jobs.txt").exists():
        pytest.skip(f"{captured.name}: no metrics endpoint before Slurm 25.11")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = captured / f"metrics_{self.path.rsplit('/', 1)[-1]}.txt"
            if not self.path.startswith("/metrics/") or not path.exists():
                self.send_error(404, "NOT FOUND")
                return
            body = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_slurms_counts_match_the_captured_queue(endpoint: str, captured: Path) -> None:
    counts = fetch_counts(endpoint)
    listed = parse_squeue_jobs((captured / "squeue_jobs.txt").read_bytes().decode("latin-1")).listed
    # squeue -r lists each task of an unsplit array, and slurmctld counts each
    pending = [j for j, state in listed if state == "PENDING"]
    running = [j for j, state in listed if state == "RUNNING"]
    assert (counts.pending, counts.running) == (len(pending), len(running))
    assert {"slurm_bf_cycle_last", "slurm_bf_last_depth"} <= counts.scheduler.keys()
    by_part = fetch_counts(endpoint, ["gpu"])
    assert by_part.pending <= counts.pending and by_part.running == counts.running
    assert fetch_counts(endpoint, ["hipri"]).pending < counts.pending  # one job asked for gpu,hipri


def test_a_read_far_below_slurms_count_writes_nothing() -> None:
    counts = SlurmCounts(pending=1000, running=5)
    check_counts(990, counts, 0.5)  # churn between two reads
    check_counts(481, counts, 0.5)
    with pytest.raises(SuspectRead, match="slurmctld's own metrics count 1000"):
        check_counts(400, counts, 0.5)


def test_an_endpoint_that_is_off_or_unreachable_is_one_reason(endpoint: str) -> None:
    with pytest.raises(MetricsUnavailable, match="HTTP 404"):
        fetch_counts(endpoint + "/nosuch")
    with pytest.raises(MetricsUnavailable, match="refused"):
        fetch_counts("http://127.0.0.1:9", timeout=2)


# ---- on a live 25.11 (make test-versions); skipped on older releases --------------------------------


@pytest.mark.slurm
@pytest.mark.parametrize("private_data", ["", "jobs"])
def test_the_daemon_reads_slurms_own_counts_where_they_are_on(tmp_path: Path, private_data: str) -> None:
    require_release(OPENMETRICS)
    overrides = {"MetricsType": "metrics/openmetrics", "PrivateData": private_data}
    cluster = LocalCluster.private(Path(tempfile.mkdtemp(prefix="rlt-om-", dir="/tmp")), message_timeout=3,
                                   test_user=None, conf_overrides=overrides, timeout=120)
    cluster.start()
    try:
        c = SlurmTestCluster(cluster)
        c.fill_gpus()
        pending = [c.submit("--gres=gpu:1", "-t", "5") for _ in range(3)]
        c.submit("-a", "0-3", "--gres=gpu:1", "-t", "5")  # four tasks, one record
        backend = SlurmBackend(load_config(None, slurm={"conf": str(cluster.conf)}))
        release = backend.detect()
        assert release.openmetrics is not private_data
        snap = backend.read()
        counts = backend.last.slurm_counts if backend.last is not None else {}
        if private_data:  # off: nothing asked, the read stands alone
            assert counts == {} and any("PrivateData=jobs disables it" in ln for ln in release.implications())
            return
        assert len(snap.pending) == len(pending) + 1
        assert counts["slurm_pending"] == len(pending) + 4 and counts["slurm_running"] == len(c.blockers)
        assert "slurm_bf_cycle_last" in counts
    finally:
        cluster.stop(purge=True)


def test_a_cluster_without_accounting_has_no_age_factor_on_every_release(captured: Path) -> None:
    """22.05 prints ``AccountingStorageType = accounting_storage/none``, 23.11+ ``(null)``: both mean no
    slurmdbd, so Slurm ignores the age weight and so must the simulator's copy of the cluster's priority."""
    text = (captured / "show_config.txt").read_text()
    text = re.sub(r"^PriorityWeightAge\s*=.*$", "PriorityWeightAge = 1000", text, flags=re.MULTILINE)
    weights, _ = cluster_weights(text, 1.0)
    assert weights.age == 0.0 and weights.job_size == 1000
