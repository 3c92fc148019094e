"""Finished runs from Slurm accounting (``sacct``), for history-based base policies (QSSF).

QSSF predicts a job's duration from its user's recent runs; offline those come from the trace, on a
cluster only slurmdbd has them. The first read looks back ``days``; later reads ask only for jobs
that ended since the previous read, minus ``OVERLAP_S`` (an accounting record can reach slurmdbd a
little after the job ended), and drop the ids already returned. ``-s`` with end states selects jobs
that *ended* in the window, so a read every minute returns a handful of lines. A cluster without
slurmdbd makes sacct fail (rc 1, "Slurm accounting storage is disabled"): that raises
``SlurmCommandError``, and the daemon then says once that QSSF predicts from requested times.
"""

from __future__ import annotations

import time

import numpy as np

from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.errors import InputFileError
from rltune_daemon.slurm.errors import ParseError
from rltune_daemon.slurm.runner import SlurmRunner
from rltune_daemon.traces.sacct import parse

COLUMNS = "JobID,User,Submit,Start,End,ReqTRES,AllocTRES,Timelimit,State"
END_STATES = "CD,F,TO,CA,OOM,NF,DL,PR"  # every state a job that ran can end in (BF/RQ/RV are not ends)
OVERLAP_S = 600.0


def sacct_time(epoch: float) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` in local time, as sacct reads and prints it (``parse_timestamp``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(epoch))


def sacct_history_argv(since: float) -> list[str]:
    """Allocations (``-X``) of all users that ended at or after ``since``, with a header naming the
    columns (``-P`` without ``-n``), so the trace loader's parser reads them."""
    return ["sacct", "-a", "-X", "-P", "-S", sacct_time(since), "-E", "now", "-s", END_STATES, "-o", COLUMNS]


def parse_history(text: str) -> FinishedRuns:
    """Runs with a start and an end (jobs cancelled while pending never ran); GPU counts from ReqTRES
    (AllocTRES when empty), as the sacct trace loader reads them, since QSSF keys runs by GPUs asked."""
    if not text.strip():
        return FinishedRuns.empty()
    try:
        raw, _ = parse(text, "sacct")
    except InputFileError as exc:
        raise ParseError("sacct", None, str(exc)) from None
    start = raw.start if raw.start is not None else raw.submit
    return FinishedRuns(
        ids=tuple(raw.ids),
        users=tuple(raw.user or [""] * len(raw.ids)),
        gpus=raw.gpus.astype(np.int64),
        runtime=raw.runtime.astype(np.float64),
        end=(start + raw.runtime).astype(np.float64),
    )


class SacctHistory:
    """Incremental reader (see module docstring). ``read`` raises ``SlurmError`` and then keeps its
    cursor, so the next successful read still covers the gap."""

    def __init__(self, runner: SlurmRunner, days: float) -> None:
        self.runner = runner
        self.days = days
        self.since: float | None = None  # start of the next query; None: look back ``days``
        self._seen: dict[str, float] = {}  # id -> end, for ids the overlap may return again

    def rewind(self) -> None:
        """Read the whole look-back again (a new policy object has no history yet)."""
        self.since = None
        self._seen.clear()

    def read(self, now: float | None = None) -> FinishedRuns:
        now = time.time() if now is None else now
        since = now - self.days * 86400.0 if self.since is None else self.since
        runs = parse_history(self.runner.run(sacct_history_argv(since)).stdout)
        fresh = np.array([i not in self._seen for i in runs.ids], dtype=np.bool_)
        runs = runs.select(np.flatnonzero(fresh).astype(np.int64))
        self._seen.update(zip(runs.ids, runs.end.tolist(), strict=True))
        self.since = now - OVERLAP_S
        self._seen = {k: e for k, e in self._seen.items() if e >= self.since - OVERLAP_S}
        return runs
