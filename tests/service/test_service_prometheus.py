"""A real Prometheus (Debian package) scrapes the real daemon's /metrics: every documented series is
there, with no per-job labels. The daemon runs ``--backend sim`` so that this needs no Slurm."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rltune_daemon.slurm.localcluster import LocalCluster
from rltune_daemon.slurm.release import OPENMETRICS
from slurm_fixtures import require_release

pytestmark = pytest.mark.prometheus

DOCUMENTED = (
    "rltune_cycle_seconds_bucket", "rltune_cycle_seconds_count", "rltune_pending_jobs",
    "rltune_queue_wait_seconds_bucket", "rltune_gpu_utilization_ratio", "rltune_priority_updates_total",
    "rltune_placement_hints_total", "rltune_errors_total", "rltune_model_info", "rltune_milp_fallbacks_total",
    "rltune_job_start_wait_seconds_bucket", "rltune_oldest_pending_wait_seconds",
    "rltune_last_cycle_timestamp_seconds", "rltune_cycles_total", "rltune_queue_checks_total",
)
ALLOWED_LABELS = {"__name__", "instance", "job", "kind", "action", "outcome", "result", "model",
                  "schema_hash", "fallback", "reason", "le", "gpus", "partition"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _prometheus_bin() -> str:
    path = shutil.which("prometheus")
    if path is None:
        if os.geteuid() != 0:
            pytest.skip("the prometheus package is not installed (and not root to install it)")
        pytest.fail("Prometheus is missing: run `make setup` (it installs the Debian package `prometheus`)")
    return path


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """Daemon (sim backend) + Prometheus scraping it every second; yields Prometheus's port."""
    tmp_path = tmp_path_factory.mktemp("prometheus")
    prom = _prometheus_bin()
    mport, pport = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")}
    env |= {"RLTUNE_METRICS__PORT": str(mport), "RLTUNE_SIM__SPEEDUP": "300", "RLTUNE_SIM__JOBS": "600",
            "RLTUNE_BASE_POLICY": "sjf", "RLTUNE_LOG__LEVEL": "warning"}
    daemon = subprocess.Popen([sys.executable, "-m", "rltune_daemon.cli.daemon", "--backend", "sim"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                   f"  - job_name: rltune\n    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n")
    server = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{pport}", "--log.level=warn"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield pport
    finally:
        for p in (server, daemon):
            p.terminate()
        for p in (server, daemon):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _query(port: int, q: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    data = _get(url)
    assert data["status"] == "success"
    return list(data["data"]["result"])


def test_prometheus_scrapes_the_documented_series(scraped: int) -> None:
    port = scraped
    deadline = time.monotonic() + 60
    result: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            # and a job seen to start, whose wait the start-wait histogram holds
            result = _query(port, "rltune_cycle_seconds_count > 2")
            started = _query(port, "rltune_job_start_wait_seconds_count")
        except OSError:
            result = started = []
        if result and started:
            break
        time.sleep(0.5)
    assert result, "Prometheus never scraped a daemon cycle"
    assert started, "Prometheus never scraped the wait of a job the daemon saw start"
    names = set(_get(f"http://127.0.0.1:{port}/api/v1/label/__name__/values")["data"])
    missing = [n for n in DOCUMENTED if n not in names]
    assert not missing, missing
    assert float(_query(port, 'up{job="rltune"}')[0]["value"][1]) == 1
    kinds = {r["metric"]["kind"] for r in _query(port, "rltune_errors_total")}
    assert kinds >= {"controller_down", "timeout"}
    (info,) = _query(port, "rltune_model_info == 1")
    assert info["metric"]["model"] == "sjf" and info["metric"].get("fallback", "") == ""  # empty: dropped
    match = urllib.parse.urlencode({"match[]": '{__name__=~"rltune_.*"}'})
    series = _get(f"http://127.0.0.1:{port}/api/v1/series?{match}")
    labels = {k for s in series["data"] for k in s}
    assert labels <= ALLOWED_LABELS, labels - ALLOWED_LABELS  # no per-job labels
    promtool = shutil.which("promtool")
    if promtool:
        argv = [promtool, "query", "instant", f"http://127.0.0.1:{port}", "rltune_pending_jobs"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
        assert "rltune_pending_jobs" in out


def test_grafana_dashboard_queries_run_on_prometheus(scraped: int) -> None:
    """Every expression of deploy/grafana/rltune.json parses and, once data is in, returns series."""
    port = scraped
    dash_file = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "rltune.json"
    dash = json.loads(dash_file.read_text())
    exprs = [t["expr"].replace("$__rate_interval", "1m") for p in dash["panels"]
             for t in p.get("targets", [])]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # rate() needs a few scrapes in its window
        try:
            if _query(port, "count_over_time(rltune_pending_jobs[1m]) >= 5"):
                break
        except OSError:
            pass
        time.sleep(0.5)
    empty = []
    for e in exprs:  # slurm_*: slurmctld's own series (25.11+), scraped in the test below
        if not _query(port, e) and "> 0" not in e and "start_wait" not in e and "slurm_" not in e:
            empty.append(e)
    assert not empty, empty


@pytest.mark.slurm
def test_prometheus_scrapes_slurmctlds_own_metrics_for_the_dashboard(tmp_path: Path) -> None:
    """Slurm 25.11 (``make test-versions``): Prometheus scrapes slurmctld with the shipped
    deploy/prometheus/slurmctld.yml, its counts are the queue's, and every Slurm expression of the
    dashboard returns series."""
    require_release(OPENMETRICS)
    prom = _prometheus_bin()
    state = Path(tempfile.mkdtemp(prefix="rlt-prom-", dir="/tmp"))  # munged (its own user) must reach it
    cluster = LocalCluster.private(state, message_timeout=3, test_user=None,
                                   conf_overrides={"MetricsType": "metrics/openmetrics"})
    cluster.start()
    server = None
    try:
        env = cluster.env()
        for gpus in (13, 1, 1):  # one job more than the GPUs, then two that must wait
            subprocess.run(["sbatch", "-o", "/dev/null", f"--gpus={gpus}", "-t", "10", "--wrap", "sleep 300"],
                           env=env, check=False, capture_output=True, cwd="/tmp")
        repo = Path(__file__).resolve().parents[2]
        shipped = (repo / "deploy" / "prometheus" / "slurmctld.yml").read_text()
        scrape = shipped.replace("slurmctld.example:6817", f"127.0.0.1:{cluster.ctld_port}")
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 1s\n" + scrape[scrape.index("scrape_configs:"):])
        pport = _free_port()
        server = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{pport}", "--log.level=warn"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if _query(pport, "count_over_time(slurm_bf_cycle_last[1m]) >= 3"):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        squeue = subprocess.run(["squeue", "-h", "-t", "PD", "-o", "%A"], env=env, capture_output=True,
                                text=True, check=True, cwd="/tmp").stdout.split()
        (pending,) = _query(pport, "slurm_jobs_pending")
        assert int(float(pending["value"][1])) == len(squeue) >= 1
        dash = json.loads((repo / "deploy/grafana/rltune.json").read_text())
        exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", []) if "slurm_" in t["expr"]]
        assert exprs and all(_query(pport, e) for e in exprs), [e for e in exprs if not _query(pport, e)]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        cluster.stop(purge=True)
