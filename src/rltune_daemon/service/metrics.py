"""Prometheus metrics of the daemon. No per-job labels (a queue of 10k jobs must not become 10k
series); every labelled family is pre-created with its known label values so dashboards and alerts
see zeros instead of missing series. Served from the daemon's own registry (tests run many daemons
in one process), bound to 127.0.0.1 unless configured otherwise: the page reveals queue sizes."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from rltune_daemon.domain import Snapshot
from rltune_daemon.errors import UserError
from rltune_daemon.harm import size_class
from rltune_daemon.service.policy import FALLBACK_KINDS, PLACER_FALLBACK_REASONS
from rltune_daemon.slurm.errors import SUSPECT_REASONS

ERROR_KINDS = ("controller_down", "timeout", "permission", "parse", "suspect_read", "call_budget", "slurm",
               "plan", "policy", "state", "update_failed", "update_unknown", "history", "internal")
HINT_ACTIONS = ("set", "cleared", "expired")
CYCLE_OUTCOMES = ("applied", "dry_run", "skipped")
QUEUE_CHECK_RESULTS = ("changed", "unchanged", "error")
# queue waits run from seconds to days
WAIT_BUCKETS = (10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800)
# a cluster with more partitions than this reports the rest as "other" (every one is a set of series)
MAX_PARTITION_LABELS = 16
CYCLE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


@dataclass
class MetricsServer:
    server: WSGIServer
    thread: threading.Thread
    port: int

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Metrics:
    """All families of the daemon (names documented in docs/operations.md)."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.cycle_seconds = Histogram("rltune_cycle_seconds", "Wall time of one daemon cycle",
                                       buckets=CYCLE_BUCKETS, registry=r)
        self.cycles = Counter("rltune_cycles", "Cycles by outcome", ["outcome"], registry=r)
        self.queue_checks = Counter("rltune_queue_checks",
                                    "Queue checks between cycles by result (changed starts a cycle)",
                                    ["result"], registry=r)
        self.pending_jobs = Gauge("rltune_pending_jobs", "Pending jobs seen in the last snapshot", registry=r)
        self.running_jobs = Gauge("rltune_running_jobs", "Running jobs seen in the last snapshot", registry=r)
        self.queue_wait = Histogram("rltune_queue_wait_seconds",
                                    "Observed waits (now - submit) of pending jobs, one sample per job "
                                    "and cycle", buckets=WAIT_BUCKETS, registry=r)
        self.start_wait = Histogram("rltune_job_start_wait_seconds",
                                    "Queue wait of jobs seen starting (start - submit), by GPUs asked for "
                                    "(size class; none: no GPU) and partition (one of the cluster's, the "
                                    "first MAX_PARTITION_LABELS, else other): whether any class pays",
                                    ["gpus", "partition"], buckets=WAIT_BUCKETS, registry=r)
        self.oldest_wait = Gauge("rltune_oldest_pending_wait_seconds",
                                 "Wait of the longest-waiting pending job (starvation alarm)", registry=r)
        self.gpu_util = Gauge("rltune_gpu_utilization_ratio",
                              "Allocated / total GPUs on usable nodes", registry=r)
        self.priority_updates = Counter("rltune_priority_updates",
                                        "SiteFactor changes applied to Slurm", registry=r)
        self.placement_hints = Counter("rltune_placement_hints", "Node hints by action", ["action"],
                                       registry=r)
        self.restored = Counter("rltune_restored_fields", "Fields put back to their original value",
                                registry=r)
        self.errors = Counter("rltune_errors", "Errors by kind", ["kind"], registry=r)
        self.suspect_reads = Counter("rltune_suspect_reads",
                                     "Reads that looked incomplete or inconsistent (the cycle wrote "
                                     "nothing), by reason", ["reason"], registry=r)
        self.deferred_updates = Gauge("rltune_deferred_updates",
                                      "Jobs whose updates the last cycle left for later cycles "
                                      "(slurm.max_updates_per_cycle)", registry=r)
        self.model_info = Gauge("rltune_model_info", "Policy in use (1 for the current combination)",
                                ["model", "schema_hash", "fallback"], registry=r)
        self.model_fallback = Gauge("rltune_model_fallback",
                                    "1 while a configured model is not the policy deciding, by why: "
                                    "unusable (not loaded), behind_base (its held-out record is behind "
                                    "multifactor or its base policy), failed (while scoring)",
                                    ["reason"], registry=r)
        self.milp_fallbacks = Counter("rltune_milp_fallbacks",
                                      "Placements made by the greedy placer instead of the MILP, by reason",
                                      ["reason"], registry=r)
        self.managed_jobs = Gauge("rltune_managed_jobs", "Jobs with a change recorded in the state file",
                                  registry=r)
        self.history_runs = Gauge("rltune_history_runs",
                                  "Finished runs (sacct) a history-based policy (qssf) has learned; 0: it "
                                  "predicts from requested times", registry=r)
        self.last_cycle = Gauge("rltune_last_cycle_timestamp_seconds",
                                "Unix time of the last completed cycle (stall alarm)", registry=r)
        for kind in ERROR_KINDS:
            self.errors.labels(kind)
        for reason in SUSPECT_REASONS:
            self.suspect_reads.labels(reason)
        for reason in PLACER_FALLBACK_REASONS:
            self.milp_fallbacks.labels(reason)
        for action in HINT_ACTIONS:
            self.placement_hints.labels(action)
        for kind in FALLBACK_KINDS:
            self.model_fallback.labels(kind)
        for outcome in CYCLE_OUTCOMES:
            self.cycles.labels(outcome)
        for result in QUEUE_CHECK_RESULTS:
            self.queue_checks.labels(result)
        self._model_labels: tuple[str, str, str] | None = None
        self._seen_pending: set[str] = set()
        self._partitions: list[str] = []  # partition label values, in the order first seen

    def set_model(self, model: str, schema_hash: str, fallback: str, kind: str = "") -> None:
        """Exactly one ``rltune_model_info`` series is 1: the policy in use and why, if it is a fallback;
        ``rltune_model_fallback`` is 1 for the fallback's ``kind`` (one of ``FALLBACK_KINDS``) alone."""
        for k in FALLBACK_KINDS:
            self.model_fallback.labels(k).set(1 if k == kind else 0)
        labels = (model, schema_hash, fallback)
        if self._model_labels == labels:
            return
        if self._model_labels is not None:
            self.model_info.remove(*self._model_labels)
        self.model_info.labels(*labels).set(1)
        self._model_labels = labels

    def observe_snapshot(self, snap: Snapshot) -> None:
        """Queue and utilisation gauges, waits of pending jobs, waits of jobs seen starting."""
        now = snap.clock
        self.pending_jobs.set(len(snap.pending))
        self.running_jobs.set(len(snap.running))
        waits = [max(now - j.submit, 0.0) for j in snap.pending]
        for w in waits:
            self.queue_wait.observe(w)
        self.oldest_wait.set(max(waits, default=0.0))
        for r in snap.running:
            if r.job.id in self._seen_pending:
                gpus = "none" if r.job.gpus <= 0 else size_class(r.job.gpus)
                self.start_wait.labels(gpus, self._partition_label(r.job.partition, snap)).observe(
                    max(r.start - r.job.submit, 0.0))
        self._seen_pending = {j.id for j in snap.pending}
        usable = [n for n in snap.nodes if n.usable]
        total = sum(n.gpus for n in usable)
        self.gpu_util.set(sum(min(n.gpus_alloc, n.gpus) for n in usable) / total if total else 0.0)

    def _partition_label(self, name: str, snap: Snapshot) -> str:
        """``name`` when it is one of the cluster's partitions (an admin's name, not a user's text) and
        among the first ``MAX_PARTITION_LABELS`` seen, else ``other``: a bounded label set."""
        if name in self._partitions:
            return name
        if len(self._partitions) < MAX_PARTITION_LABELS and any(p.name == name for p in snap.partitions):
            self._partitions.append(name)
            return name
        return "other"

    def serve(self, bind: str, port: int) -> MetricsServer:
        """Start the /metrics endpoint; a port in use is a one-line ``UserError``."""
        try:
            server, thread = start_http_server(port, addr=bind, registry=self.registry)
        except OSError as exc:
            raise UserError(
                f"cannot serve metrics on {bind}:{port}: {exc.strerror or exc} (another rltune-daemon? "
                "set metrics.port, or metrics.enabled = false)"
            ) from None
        return MetricsServer(server, thread, int(server.server_address[1]))
