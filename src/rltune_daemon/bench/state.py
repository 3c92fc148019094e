"""What a save of the undo record costs: ``time_saves`` commits a record of ``jobs`` jobs shaped like
the live daemon's, then times saves that each follow a cycle changing ``changed`` of them."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from rltune_daemon.core.record import DaemonState, FieldChange, JobRecord
from rltune_daemon.errors import UserError
from rltune_daemon.service.statefile import StateFile, journal_path

FIRST_ID = 100_000
START = 1.7e9  # a wall-clock time, so timestamps have the width of real ones


def record(jobs: int) -> DaemonState:
    """``jobs`` records: every job's SiteFactor set and confirmed, every tenth hinted to two nodes, every
    fourth remembered by the starvation guard."""
    state = DaemonState()
    for i in range(jobs):
        job_id = str(FIRST_ID + i)
        rec = JobRecord({"site_factor": FieldChange(0, 1000 + i, 0, START + i, START + i, True)})
        if i % 10 == 0:
            rec.fields["exc_nodes"] = FieldChange((), ("k80-1", "m40-1"), (), START, START, True)
            rec.hint_age, rec.hint_nodes = 2, ("p100-2",)
        state.jobs[job_id] = rec
        if i % 4 == 0:
            state.demoted_since[job_id] = START + i
    return state


def _cycle(state: DaemonState, job_ids: list[str]) -> None:
    """What a cycle does to a job it moves: a new SiteFactor asked for, not yet confirmed."""
    for job_id in job_ids:
        fc = state.jobs[job_id].fields["site_factor"]
        assert isinstance(fc.value, int), "a SiteFactor"
        fc.previous, fc.value = fc.value, fc.value + 1
        fc.last_set += 60.0
        fc.confirmed = False


def time_saves(path: Path, jobs: int = 10_000, changed: int = 200, repeats: int = 20) -> dict[str, Any]:
    """Seconds per ``StateFile.save`` at ``path`` (a new file: an existing record is never touched) after
    each of ``repeats`` cycles that change ``changed`` of ``jobs`` recorded jobs (a different slice each
    time); median, min and max, the first (full) save, and the rows each save wrote."""
    journal = journal_path(path)
    if journal.exists():
        raise UserError(f"{journal} exists; time_saves writes a fresh state file and never reuses one")
    sf = StateFile(journal)
    state = record(jobs)
    t = time.perf_counter()
    sf.save(state)
    first = time.perf_counter() - t
    ids = list(state.jobs)
    seconds, rows = [], []
    for r in range(repeats):
        start = (r * changed) % max(1, jobs - changed + 1)
        _cycle(state, ids[start:start + changed])
        t = time.perf_counter()
        rows.append(sf.save(state))
        seconds.append(time.perf_counter() - t)
    sf.close()
    return {"jobs": jobs, "changed": changed, "repeats": repeats, "first_save_s": round(first, 4),
            "median_s": round(statistics.median(seconds), 4), "min_s": round(min(seconds), 4),
            "max_s": round(max(seconds), 4), "rows_per_save": statistics.median(rows),
            "file_bytes": journal.stat().st_size}
