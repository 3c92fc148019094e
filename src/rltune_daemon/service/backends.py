"""Where snapshots come from and updates go: the Slurm CLI or the simulated Slurm. The loop sees only
``Backend``, so ``--backend sim`` runs exactly the cycle a real cluster gets."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol

from rltune_daemon.core.cycle import Cluster
from rltune_daemon.domain import Snapshot
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.updates import ApplyResult, Fate, JobUpdate, ReadInfo
from rltune_daemon.service.config import DaemonConfig
from rltune_daemon.slurm.errors import SlurmError
from rltune_daemon.slurm.history import SacctHistory
from rltune_daemon.slurm.integrity import ReadLimits, check_alive
from rltune_daemon.slurm.openmetrics import MetricsUnavailable, check_counts, fetch_counts
from rltune_daemon.slurm.reader import SlurmReader
from rltune_daemon.slurm.release import SlurmRelease
from rltune_daemon.slurm.runner import SlurmRunner
from rltune_daemon.slurm.writer import SlurmWriter


class Backend(Cluster, Protocol):
    """A cluster the live service runs on (``core.cycle.Cluster``) plus what its loop needs between
    cycles: queue checks, the call count, the clock. ``SlurmBackend`` here; ``sim.backend.SimBackend``
    for ``--backend sim`` (built by the CLI, so the service never imports the simulator)."""

    name: str

    def watch(self) -> frozenset[tuple[str, str]]:
        """The ``(job id, state)`` set of pending and running jobs now, as ``last.queue`` holds it for
        the last read: the daemon starts a cycle early when the two differ."""

    def calls(self) -> int:
        """Slurm commands run in the current cycle."""

    def tick(self, interval: float) -> float:
        """After a cycle or a queue check: advance (simulator: to its next check) and return the wall
        seconds to wait before the next check."""

    def clock(self) -> float:
        """Seconds on the clock the cycles are timed by: wall time live, simulated time offline."""

    def done(self) -> bool:
        """Nothing left to do (a finished simulated workload); a live cluster never is."""

    def summary(self) -> dict[str, Any]: ...


HISTORY_RETRY_S = 600.0  # a cluster without slurmdbd is not asked every minute


class SlurmBackend:
    """The CLI backend: ``SlurmReader`` + ``SlurmWriter`` on one runner (one call budget per cycle)."""

    name = "slurm"

    def __init__(self, cfg: DaemonConfig) -> None:
        s = cfg.slurm
        self.runner = SlurmRunner(
            slurm_conf=s.conf or None, timeout=s.timeout, ping_timeout=s.ping_timeout,
            max_calls_per_cycle=s.max_calls_per_cycle, bin_dir=s.bin_dir or None,
        )
        limits = ReadLimits(max_drop_share=s.max_drop_share)
        if s.reader == "pyslurm":  # imported only when chosen: pyslurm is an optional extra
            from rltune_daemon.slurm.pyslurm_backend import PyslurmReader

            self.reader: SlurmReader = PyslurmReader(self.runner, partitions=s.partitions, limits=limits)
        else:
            self.reader = SlurmReader(self.runner, partitions=s.partitions, limits=limits, concurrent=True)
        self.writer = SlurmWriter(self.runner, timeout_base=s.timeout, batch=s.write_batch, rate=s.write_rate)
        self.release: SlurmRelease | None = None  # read by ``detect`` before the first cycle
        self._metrics_off = ""  # why slurmctld's metrics endpoint failed; the daemon stops asking it
        self.history = SacctHistory(self.runner, s.history_days)
        self.history_every = float(cfg.interval)
        self._history_due = 0.0  # monotonic time of the next sacct read

    @property
    def last(self) -> ReadInfo | None:
        return self.reader.last

    def read(self) -> Snapshot:
        snap = self.reader.read()
        info = self.reader.last
        url = self.release.metrics_url if self.release is not None else ""
        if url and not self._metrics_off:
            try:
                counts = fetch_counts(url, self.reader.partitions, self.runner.ping_timeout)
            except MetricsUnavailable as exc:  # reported once; the reads go on without the cross-check
                self._metrics_off = str(exc)
                if info is not None:
                    info.slurm_metrics_error = self._metrics_off
            else:
                # slurmctld counts each task of an unsplit array, which the Snapshot holds once
                tasks = sum(n - 1 for n in info.array_tasks.values()) if info is not None else 0
                check_counts(len(snap.pending) + tasks, counts, self.reader.limits.max_drop_share)
                if info is not None:
                    info.slurm_counts = counts.log_fields()
        return snap

    def watch(self) -> frozenset[tuple[str, str]]:
        return self.reader.watch()

    def confirm(self, job_ids: Collection[str]) -> dict[str, Fate]:
        """Only Slurm's word that a job is over lets its record go; a job it still lists as pending or
        running means the read missed it (``SuspectRead``: nothing is written this cycle)."""
        fates = self.reader.confirm(job_ids)
        check_alive(fates)
        return fates

    def apply(self, snapshot: Snapshot, updates: Iterable[JobUpdate], *,
              site_factor_unknown: Collection[str] = frozenset(), dry_run: bool = False,
              restore: bool = False, should_stop: Callable[[], bool] | None = None) -> ApplyResult:
        return self.writer.apply(snapshot, updates, site_factor_unknown=site_factor_unknown, dry_run=dry_run,
                                 restore=restore, should_stop=should_stop)

    def detect(self) -> SlurmRelease:
        """Read which Slurm this is (``scontrol show config``: version, priority plugin, RPC rate limit,
        metrics) and, when Slurm's rate limit applies to this user, make every call wait for its tokens
        (``pacing``). Raises ``SlurmError`` when Slurm does not answer."""
        self.runner.begin_cycle()
        text = self.runner.run(["scontrol", "show", "config"]).stdout
        self.release = SlurmRelease.from_config(text)
        limit = self.release.rate_limit
        self.runner.rpc_bucket = limit.bucket_for_us() if limit.applies else None
        return self.release

    def calls(self) -> int:
        return self.runner.calls_this_cycle

    def tick(self, interval: float) -> float:
        return interval

    def clock(self) -> float:
        return time.monotonic()

    def done(self) -> bool:
        return False

    def summary(self) -> dict[str, Any]:
        return {}

    def finished_runs(self, rewind: bool = False) -> FinishedRuns | None:
        """At most one ``sacct`` per ``interval`` (cycles triggered by queue changes come more often);
        after a failure the next try is ``HISTORY_RETRY_S`` later. None: not due, nothing read."""
        now = time.monotonic()
        if rewind:
            self.history.rewind()
            self._history_due = 0.0
        if now < self._history_due:
            return None
        try:
            runs = self.history.read()
        except SlurmError:
            self._history_due = now + HISTORY_RETRY_S
            raise
        self._history_due = now + self.history_every
        return runs
