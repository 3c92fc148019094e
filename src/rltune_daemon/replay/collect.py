"""Per-job times from Slurm itself: ``squeue -t all`` polled while the replay runs (a finished job
stays visible for MinJobAge, 300 s by default, far longer than a poll period). Slurm's submit, start
and end are whole seconds; each poll keeps the latest values of the replay's own jobs only. While a
job pends its ``ExcNodeList`` is recorded too: the daemon's placement hint as Slurm holds it."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

TERMINAL = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                      "PREEMPTED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"})
STARTED = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED"}) | TERMINAL
FORMAT = "%i|%T|%V|%S|%e|%N|%x"
FIELDS = 7


@dataclass
class JobTimes:
    job_id: str
    _: KW_ONLY  # what was seen of the job, by name: three times and two node lists side by side
    state: str = ""
    submit: float | None = None
    start: float | None = None
    end: float | None = None
    nodes: str = ""
    excluded: str = ""  # last ExcNodeList seen while pending ("" never)
    ever_excluded: bool = False

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL or self.state.startswith("CANCELLED")


def _epoch(text: str) -> float | None:
    t = text.strip()
    return float(t) if t.lstrip("-").isdigit() and int(t) > 0 else None


@dataclass
class Collector:
    env: dict[str, str]
    jobs: dict[str, JobTimes] = field(default_factory=dict)
    polls: int = 0
    failures: int = 0

    def poll(self, ids: list[str]) -> None:
        """One ``squeue``: update every known id it shows (others' jobs are ignored)."""
        for job_id in ids:
            self.jobs.setdefault(job_id, JobTimes(job_id))
        env = {**self.env, "SLURM_TIME_FORMAT": "%s"}
        argv = ["squeue", "-h", "-t", "all", "-o", FORMAT]
        if os.geteuid() != 0:
            argv += ["-u", str(os.getuid())]
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False,
                                  cwd="/tmp")
        except subprocess.TimeoutExpired:
            self.failures += 1
            return
        self.polls += 1
        if proc.returncode != 0:
            self.failures += 1
            return
        for line in proc.stdout.splitlines():
            parts = line.split("|")
            if len(parts) != FIELDS or parts[0] not in self.jobs:
                continue
            rec = self.jobs[parts[0]]
            if rec.finished:
                continue
            rec.state = parts[1].strip()
            rec.submit = _epoch(parts[2]) or rec.submit
            if rec.state in STARTED:
                rec.start = _epoch(parts[3]) or rec.start
                rec.nodes = parts[5].strip() or rec.nodes
            elif rec.state == "PENDING":
                exc = parts[6].strip()
                rec.excluded = exc
                rec.ever_excluded = rec.ever_excluded or bool(exc)
            if rec.finished:
                rec.end = _epoch(parts[4])

    def unfinished(self) -> list[str]:
        return [i for i, r in self.jobs.items() if not r.finished]

    def queued(self, ids: list[str]) -> list[str]:
        """Of ``ids``, those squeue still shows pending or running (the "nothing left" check)."""
        return [i for i in ids if i in self.jobs and not self.jobs[i].finished]


_EXC = re.compile(r"exc_nodes(?: to (\S*))? for JobId=(\d+)")
_START = re.compile(r"(?:Started JobId=(\d+) in \S+ on (\S+))|(?:Allocate JobId=(\d+) NodeList=(\S+))")


def ctld_hints(log: Path, jobs: dict[str, JobTimes]) -> int:
    """Read slurmctld's own log (local cluster) for every ``ExcNodeList`` it set on the replay's jobs
    and the nodes each was started on: a hint that lasted less than a poll period is still seen. Sets
    ``ever_excluded`` and, as ``excluded``, the list in force when the job started. Returns how many
    updates were found."""
    if not log.exists():
        return 0
    current: dict[str, str] = {}
    found = 0
    for line in log.read_text(errors="replace").splitlines():
        m = _EXC.search(line)
        if m and m.group(2) in jobs:
            value = "" if "clear" in line else (m.group(1) or "")
            current[m.group(2)] = value
            found += 1
            if value:
                jobs[m.group(2)].ever_excluded = True
            continue
        m = _START.search(line)
        if m:
            job_id = m.group(1) or m.group(3)
            if job_id in jobs:
                jobs[job_id].excluded = current.get(job_id, "")
    return found
