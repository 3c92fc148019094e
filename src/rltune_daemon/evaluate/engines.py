"""Where an evaluation's runs execute: this machine's cores (``local``, the default) or a Slurm job
array through submitit (``slurm``), for evaluations too large for one machine on a site that already
runs Slurm.

Every run is one policy on one window, deterministic given the evaluation's settings, so where it runs
changes no number: the array's tasks load the workload as a local worker does (``runner._init``) and run
the same ``runner._run``. The array has ``jobs`` tasks (each one CPU), the runs dealt round-robin between
them so that each loads the trace once. submitit keeps its pickles and logs in a folder every node must
see (a shared filesystem, as for any array job); it is removed after a run that succeeded and kept, with
a one-line error naming it, after one that did not.

A task that ends without a result (cancelled, out of time or memory) is found with ``squeue`` rather
than ``sacct``, so clusters without accounting are served too. An evaluation that stops early (an error,
Ctrl-C) cancels the tasks still queued or running: nothing of it is left on the cluster.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rltune_daemon.errors import UserError

ENGINES = ("local", "slurm")
TASK_MEM_GB = 4  # one trace and one simulation; Philly's 110k jobs take about 1 GB
TASK_HOURS = 24  # per array task; the partition's MaxTime must allow it
GONE_GRACE_S = 30.0  # a task missing from squeue this long without a result has ended without one
POLL_S = 1.0


@dataclass(frozen=True)
class Engine:
    """``local``, or ``slurm`` with an optional partition (Slurm's default partition when "")."""

    kind: str = "local"
    partition: str = ""
    folder: Path = Path("rltune-slurm-jobs")
    wait_s: float = 0.0  # give up (and cancel the array) after this long; 0: wait while Slurm lists it


def parse_engine(text: str, folder: Path | None = None) -> Engine:
    """``local``, ``slurm`` or ``slurm:PARTITION`` (the ``--engine`` flag)."""
    kind, _, partition = text.strip().partition(":")
    if kind not in ENGINES or (kind == "local" and partition):
        raise UserError(f"--engine {text!r}: expected local, slurm or slurm:PARTITION")
    return Engine(kind, partition.strip(), folder or Engine.folder)


Task = tuple[str, int]  # (policy, window)


def deal(tasks: Sequence[Task], n: int) -> list[list[Task]]:
    """``tasks`` dealt round-robin into at most ``n`` non-empty chunks."""
    n = max(1, min(n, len(tasks)))
    return [list(tasks[i::n]) for i in range(n)]


def _squeue_ids(job_ids: list[str]) -> set[str] | None:
    """Which of the array's task ids Slurm still lists; None when squeue cannot answer (keep waiting)."""
    array = sorted({j.split("_")[0] for j in job_ids})
    proc = subprocess.run(["squeue", "-h", "-r", "-o", "%i", "-j", ",".join(array)], capture_output=True,
                          text=True, timeout=60, check=False)
    if proc.returncode != 0:
        return None
    return {line.strip() for line in proc.stdout.splitlines() if line.strip()}


def run_on_slurm(engine: Engine, fn: Callable[..., list[dict[str, Any]]], args: Any,
                 chunks: list[list[Task]], on_done: Callable[[int], object]) -> list[dict[str, Any]]:
    """``fn(args, chunk)`` for every chunk as one task of a Slurm array; the runs of all chunks.
    ``on_done(n)`` is told how many runs each finished task brought back."""
    import submitit
    from submitit.core.utils import FailedJobError

    logging.getLogger("submitit").setLevel(logging.ERROR)  # its sacct retries: squeue decides here
    folder = engine.folder.resolve() / f"evaluate-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    params: dict[str, Any] = {"timeout_min": TASK_HOURS * 60, "cpus_per_task": 1, "mem_gb": TASK_MEM_GB,
                              "slurm_array_parallelism": len(chunks), "name": "rltune-evaluate"}
    if engine.partition:
        params["slurm_partition"] = engine.partition
    executor.update_parameters(**params)
    try:
        jobs = executor.map_array(fn, [args] * len(chunks), chunks)
    except (FailedJobError, subprocess.CalledProcessError, OSError) as exc:
        said = [ln for ln in str(exc).splitlines() if ln.strip()]
        raise UserError(f"--engine slurm: sbatch refused the array ({said[-1] if said else exc!r}); check "
                        f"the partition (slurm:PARTITION), that it allows {TASK_HOURS} h and "
                        f"{TASK_MEM_GB} GB per task, and that sbatch works here") from None
    waiting = {j.job_id: j for j in jobs}
    try:
        out = _collect(engine, waiting, on_done)
    finally:
        for job in waiting.values():  # interrupted or failed: nothing of ours keeps running or queued
            with contextlib.suppress(Exception):
                job.cancel(check=False)
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # the engine's folder too, when no other run is in it
        folder.parent.rmdir()
    return out


def _collect(engine: Engine, waiting: dict[str, Any], on_done: Callable[[int], object]
             ) -> list[dict[str, Any]]:
    """The runs of every array task in ``waiting`` (emptied as they come back)."""
    out: list[dict[str, Any]] = []
    missing_since: dict[str, float] = {}
    t0 = time.monotonic()
    while waiting:
        for job_id, job in list(waiting.items()):
            if job.paths.result_pickle.exists():
                try:
                    runs = job.result()
                except Exception as exc:  # the task's own exception, pickled by submitit
                    raise UserError(f"--engine slurm: array task {job_id} failed ({type(exc).__name__}: "
                                    f"{str(exc).splitlines()[-1:]}); its log is {job.paths.stderr}") from None
                out.extend(runs)
                on_done(len(runs))
                del waiting[job_id]
        listed = _squeue_ids(list(waiting)) if waiting else set()
        now = time.monotonic()
        for job_id, job in waiting.items():
            if listed is None or job_id in listed:
                missing_since.pop(job_id, None)
            elif now - missing_since.setdefault(job_id, now) > GONE_GRACE_S:
                raise UserError(f"--engine slurm: array task {job_id} ended without a result (cancelled, "
                                f"out of time or memory?); its log is {job.paths.stderr}")
        if waiting and engine.wait_s and now - t0 > engine.wait_s:
            raise UserError(f"--engine slurm: {len(waiting)} array task(s) not done after "
                            f"{engine.wait_s:g} s (still queued or running: {', '.join(sorted(waiting))}); "
                            "cancelled")
        if waiting:
            time.sleep(POLL_S)
    return out
