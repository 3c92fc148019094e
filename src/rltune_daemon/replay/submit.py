"""Timed submission: each job is ``sbatch``-ed at ``t0 + submit / S`` (wall clock), in trace order.

Every job id is recorded the moment ``sbatch`` returns it, so that cleanup cancels exactly the jobs the
replay submitted and nothing else. Runs in a thread; ``stop`` ends it between two submissions."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field

from rltune_daemon.replay.scaling import JobRequest


@dataclass(frozen=True)
class Submitted:
    trace_id: str
    job_id: str
    wall: float  # time.time() when sbatch returned
    argv: tuple[str, ...]


@dataclass(kw_only=True)
class Submitter:
    """Submits ``plan`` (trace id, seconds after ``t0``, request) with ``env``; ``submitted`` grows as
    jobs are accepted; ``error`` is the first sbatch failure (submission then stops)."""

    plan: list[tuple[str, float, JobRequest]]
    env: dict[str, str]
    stop: threading.Event
    t0: float = 0.0
    submitted: list[Submitted] = field(default_factory=list)
    error: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)

    def ids(self) -> list[str]:
        with self.lock:
            return [s.job_id for s in self.submitted]

    def run(self) -> None:
        try:
            for trace_id, at, req in self.plan:
                while not self.stop.is_set():
                    left = self.t0 + at - time.time()
                    if left <= 0:
                        break
                    self.stop.wait(min(left, 0.2))
                if self.stop.is_set():
                    return
                argv = req.argv()
                try:
                    proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60,
                                          check=False, cwd="/tmp")
                except subprocess.TimeoutExpired:
                    self.error = f"sbatch for {trace_id} did not answer within 60 s"
                    return
                job_id = proc.stdout.strip().split(";")[0]
                if proc.returncode != 0 or not job_id.isdigit():
                    self.error = f"sbatch for {trace_id} failed: {proc.stderr.strip() or proc.stdout.strip()}"
                    return
                with self.lock:
                    self.submitted.append(Submitted(trace_id, job_id, time.time(), tuple(argv)))
        finally:
            self.done.set()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="replay-submit", daemon=True)
        thread.start()
        return thread


def cancel(env: dict[str, str], job_ids: list[str]) -> None:
    """``scancel`` exactly these ids (in chunks: a 256-job replay is one short call per 100)."""
    for i in range(0, len(job_ids), 100):
        chunk = job_ids[i : i + 100]
        subprocess.run(["scancel", *chunk], env=env, capture_output=True, text=True, timeout=60, check=False,
                       cwd="/tmp")
