"""Pure parsers for the Slurm 22.05 client outputs the reader asks for (no I/O here).

Every format is pipe-separated and chosen so that no free-text field can break it: the only free text
read at all is the pending reason (it can hold spaces, commas, ``|`` and newlines when set by a
job_submit plugin), so it is the LAST squeue field; a line that does not look like the start of a
record continues the previous record's reason. Structural surprises (a first line that is not a
record, wrong field counts in fixed-width formats) raise ``ParseError``; a bad value in one record
skips that record and says why (``Parsed.skipped``), so one odd job cannot stop the daemon.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rltune_daemon.slurm.errors import ParseError
from rltune_daemon.slurm.formats import (
    UNLIMITED,
    parse_duration,
    parse_gres_gpu,
    parse_memory_mb,
    parse_timestamp,
    parse_tres,
)

# ---- formats (the argv builders live in reader.py) ---------------------------------------------

# squeue -o letters (FACTS e): %A raw job id (what sprio prints and `scontrol update JobId=` takes),
# %F/%K array job/task id, %b tres-per-node (undocumented in 22.05), %h OverSubscribe, %n/%x req/exc
# nodes (-O has no excluded-nodes field in 22.05), %y nice, %r reason (free text, last).
SQUEUE_JOB_FIELDS = (
    "%A", "%F", "%K", "%T", "%u", "%a", "%P", "%q", "%Q", "%y", "%V", "%S", "%l",
    "%D", "%C", "%m", "%b", "%h", "%N", "%n", "%x", "%r",
)
SQUEUE_JOB_FORMAT = "|".join(SQUEUE_JOB_FIELDS)

# squeue -O: per-job and per-task GPU requests exist only here (FACTS e: `--gpus=` is not in %b), and
# tres-alloc gives the job's TOTAL cpu/mem (``%m`` is per CPU or per node with no way to tell).
SQUEUE_TRES_FIELDS = ("JobID", "tres-per-job", "tres-per-task", "NumTasks", "tres-alloc")
SQUEUE_TRES_FORMAT = ",".join(f"{f}:|" for f in SQUEUE_TRES_FIELDS)

# sprio: %i raw id, %r partition (one row per partition of a multi-partition job), %Y priority,
# %S site factor (weight 1), then every weighted factor so an admin-set priority can be recognised.
SPRIO_FIELDS = ("%i", "%r", "%Y", "%S", "%A", "%F", "%J", "%P", "%Q", "%B", "%N", "%T")
SPRIO_FORMAT = "|".join(SPRIO_FIELDS)

# sinfo -N: one row per (node, partition) pair; the partition's PriorityTier/PriorityJobFactor/MaxTime
# come along, so no separate partition call is needed (FACTS f: ~6 ms for 5 nodes).
SINFO_NODE_FIELDS = (
    "NodeList", "Gres", "GresUsed", "StateLong", "CPUsState", "Memory", "AllocMem",
    "Partition", "PriorityTier", "PriorityJobFactor", "Time",
)
SINFO_NODE_FORMAT = ",".join(f"{f}:|" for f in SINFO_NODE_FIELDS)

_NULLS = frozenset({"", "(null)", "N/A", "n/a", "None"})
_RECORD_START = re.compile(r"^\d+\|")


def _clean(value: str) -> str:
    v = value.strip()
    return "" if v in _NULLS else v


def _int(value: str, what: str) -> int:
    v = value.strip()
    try:
        return int(v)
    except ValueError:
        try:
            return round(float(v))
        except ValueError:
            raise ValueError(f"{what} is not a number: {value!r}") from None


T = TypeVar("T")


@dataclass
class Parsed(Generic[T]):
    """Records parsed from one command output plus ``(key, reason)`` for records that were skipped."""

    records: list[T] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


# ---- squeue -o -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One squeue line. Times are epoch seconds; ``time_limit`` is inf for UNLIMITED."""

    job_id: str
    array_job_id: str
    array_task: str
    state: str
    user: str
    account: str
    partitions: tuple[str, ...]
    qos: str
    priority: int
    nice: int
    submit: float | None
    start: float | None
    time_limit: float
    nodes: int
    cpus: int
    min_memory_mb: int
    tres_per_node: str
    oversubscribe: str
    node_list: str
    req_nodes: str
    exc_nodes: str
    reason: str


def split_records(text: str, nfields: int, source: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_no, fields)``; the last field is free text that may contain ``|`` and newlines.

    A line starts a record when it begins with ``<digits>|`` and has at least ``nfields - 1`` pipes;
    any other line is appended (after a newline) to the previous record's last field.
    """
    body = text.rstrip("\n")
    if not body.strip():
        return
    current: tuple[int, list[str]] | None = None
    for no, line in enumerate(body.split("\n"), 1):
        if _RECORD_START.match(line) and line.count("|") >= nfields - 1:
            if current is not None:
                yield current
            current = (no, line.split("|", nfields - 1))
        elif current is not None:
            current[1][-1] += "\n" + line
        else:
            raise ParseError(source, no, f"expected a job record, got {line[:60]!r}")
    if current is not None:
        yield current


def _job_record(f: list[str]) -> JobRecord:
    job_id = f[0].strip()
    task = _clean(f[2])
    limit_text = f[12].strip()
    return JobRecord(
        job_id=job_id,
        array_job_id=_clean(f[1]) if task else "",
        array_task=task,
        state=f[3].strip(),
        user=_clean(f[4]),
        account=_clean(f[5]),
        partitions=tuple(p for p in _clean(f[6]).split(",") if p),
        qos=_clean(f[7]),
        priority=_int(f[8], "priority"),
        nice=_int(f[9], "nice"),
        submit=parse_timestamp(f[10]),
        start=parse_timestamp(f[11]),
        time_limit=UNLIMITED if limit_text in {"NOT_SET", "INVALID"} else parse_duration(limit_text),
        nodes=_int(f[13].split("-")[0], "node count"),
        cpus=_int(f[14], "cpu count"),
        min_memory_mb=parse_memory_mb(f[15]) if _clean(f[15]) else 0,
        tres_per_node=_clean(f[16]),
        oversubscribe=_clean(f[17]) or "OK",
        node_list=_clean(f[18]),
        req_nodes=_clean(f[19]),
        exc_nodes=_clean(f[20]),
        reason=f[21].strip(),
    )


def parse_squeue_jobs(text: str, source: str = "squeue") -> Parsed[JobRecord]:
    """Parse ``squeue -h -r -o SQUEUE_JOB_FORMAT``."""
    out: Parsed[JobRecord] = Parsed()
    for no, f in split_records(text, len(SQUEUE_JOB_FIELDS), source):
        if len(f) != len(SQUEUE_JOB_FIELDS):  # pragma: no cover - split_records guarantees it
            raise ParseError(source, no, f"expected {len(SQUEUE_JOB_FIELDS)} fields, got {len(f)}")
        try:
            out.records.append(_job_record(f))
        except ValueError as exc:
            out.skipped.append((f[0].strip(), f"{source} line {no}: {exc}"))
    return out


# ---- squeue -O -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TresRecord:
    """Per-job GPU requests and the job's total CPUs/memory (``tres-alloc``)."""

    job_id: str
    tres_per_job: str
    tres_per_task: str
    num_tasks: int
    alloc: dict[str, str]

    @property
    def cpus(self) -> int | None:
        v = self.alloc.get("cpu")
        return int(v) if v else None

    @property
    def mem_mb(self) -> int | None:
        v = self.alloc.get("mem")
        return parse_memory_mb(v) if v else None


def _fixed_lines(text: str, nfields: int, source: str) -> Iterator[tuple[int, list[str]]]:
    """Lines of an ``-O 'Field:|,...'`` output: exactly ``nfields`` values, each followed by ``|``."""
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != nfields + 1 or parts[-1].strip():
            raise ParseError(source, no, f"expected {nfields} '|'-terminated fields, got {line[:80]!r}")
        yield no, parts[:-1]


def parse_squeue_tres(text: str, source: str = "squeue -O") -> Parsed[TresRecord]:
    """Parse ``squeue -h -r -O SQUEUE_TRES_FORMAT``; array task lines of one record are merged."""
    out: Parsed[TresRecord] = Parsed()
    seen: set[str] = set()
    for no, f in _fixed_lines(text, len(SQUEUE_TRES_FIELDS), source):
        job_id = f[0].strip()
        if not job_id.isdigit():
            raise ParseError(source, no, f"job id {job_id!r} is not a raw job id")
        if job_id in seen:
            continue
        seen.add(job_id)
        try:
            tasks = _clean(f[3])
            out.records.append(
                TresRecord(job_id, _clean(f[1]), _clean(f[2]), _int(tasks, "tasks") if tasks else 1,
                           parse_tres(f[4]))
            )
        except ValueError as exc:
            out.skipped.append((job_id, f"{source} line {no}: {exc}"))
    return out


def gpus_in_spec(spec: str) -> tuple[int, str]:
    """GPUs and type in a TRES/GRES request: ``gres:gpu:p100:2`` (22.05), ``gres/gpu:p100=2`` (newer
    Slurm), ``gpu:2``, lists of those; non-GPU items ignored. Empty/N/A -> (0, "")."""
    s = _clean(spec)
    if not s:
        return 0, ""
    total, first_type = 0, ""
    for raw in s.split(","):
        item = raw.strip()
        if item.startswith("gres/gpu"):  # TRES style: gres/gpu[:type]=count
            key, _, count = item.partition("=")
            gtype = key.split(":", 1)[1] if ":" in key else ""
            n = int(count) if count.isdigit() else 1
        else:
            n, gtype = parse_gres_gpu(item)
        total += n
        first_type = first_type or gtype
    return total, first_type


# ---- sprio -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrioRecord:
    """One sprio row. ``factors`` is the sum of the weighted multifactor components (without the
    site factor and nice)."""

    job_id: str
    partition: str
    priority: int
    site_factor: int
    factors: float
    nice: int

    def admin_set(self, tolerance: float = 10.0) -> bool:
        """True when the priority is not what multifactor computes from the listed factors.

        An admin-set ``Priority=N`` freezes the job: sprio then prints every factor as 0 (checked on
        22.05), so ``N`` differs from ``site - nice`` (SiteFactor has no effect there, FACTS a). The
        sum of the printed (rounded) factors differs from the real priority only by rounding, and
        multifactor never returns less than 1, hence the clamp and the small tolerance.
        """
        expected = max(self.factors + self.site_factor - self.nice, 1.0)
        return self.priority > 0 and abs(self.priority - expected) > tolerance


def _tres_factor_sum(text: str) -> float:
    total = 0.0
    for value in parse_tres(text).values():
        try:
            total += float(value)
        except ValueError:
            raise ValueError(f"TRES factor is not a number: {value!r}") from None
    return total


def parse_sprio(text: str, source: str = "sprio") -> Parsed[PrioRecord]:
    """Parse ``sprio -h -o SPRIO_FORMAT``. Held jobs, and jobs for ~1 s after a release (EligibleTime
    still Unknown), are not listed at all (FACTS a); an empty queue prints nothing (rc 0)."""
    out: Parsed[PrioRecord] = Parsed()
    n = len(SPRIO_FIELDS)
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        f = line.split("|")
        if len(f) != n or not f[0].strip().isdigit():
            if no == 1 and "Unable to find jobs" in line:
                continue
            raise ParseError(source, no, f"expected {n} fields starting with a job id, got {line[:80]!r}")
        try:
            factors = sum(_int(v, "factor") for v in f[4:10]) + _tres_factor_sum(f[11])
            out.records.append(
                PrioRecord(f[0].strip(), _clean(f[1]), _int(f[2], "priority"), _int(f[3], "site"),
                           factors, _int(f[10], "nice"))
            )
        except ValueError as exc:
            out.skipped.append((f[0].strip(), f"{source} line {no}: {exc}"))
    return out


# ---- sinfo -N -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One (node, partition) row of ``sinfo -N``."""

    name: str
    gpus: int
    gpu_type: str
    gpus_alloc: int
    state: str
    cpus: int
    cpus_alloc: int
    mem_mb: int
    mem_alloc_mb: int
    partition: str
    default_partition: bool
    priority_tier: int
    priority_job_factor: int
    max_time: float


# Node states (StateLong, lower case) on which Slurm starts no new job; "*" = not responding.
UNUSABLE_STATE_WORDS = (
    "down", "drain", "fail", "unk", "future", "inval", "maint", "reboot", "power_down",
    "powered_down", "powering_down", "not_responding",
)


def node_usable(state: str) -> bool:
    """False for down/drained/draining/failing/unknown/not-responding (``*``) and similar nodes."""
    s = state.strip().lower()
    return bool(s) and "*" not in s and not any(w in s for w in UNUSABLE_STATE_WORDS)


def _cpus_state(text: str) -> tuple[int, int]:
    """``A/I/O/T`` -> (total, allocated)."""
    parts = text.strip().split("/")
    if len(parts) != 4:
        raise ValueError(f"CPUsState is not A/I/O/T: {text!r}")
    return _int(parts[3], "total CPUs"), _int(parts[0], "allocated CPUs")


def parse_sinfo_nodes(text: str, source: str = "sinfo") -> Parsed[NodeRecord]:
    """Parse ``sinfo -h -a -N -O SINFO_NODE_FORMAT``."""
    out: Parsed[NodeRecord] = Parsed()
    for no, f in _fixed_lines(text, len(SINFO_NODE_FIELDS), source):
        name = f[0].strip()
        try:
            gpus, gtype = gpus_in_spec(f[1])
            used, used_type = gpus_in_spec(f[2])
            cpus, cpus_alloc = _cpus_state(f[4])
            part = _clean(f[7])
            out.records.append(
                NodeRecord(
                    name=name, gpus=gpus, gpu_type=gtype or used_type, gpus_alloc=used,
                    state=f[3].strip(), cpus=cpus, cpus_alloc=cpus_alloc,
                    mem_mb=_int(f[5], "memory"), mem_alloc_mb=_int(f[6], "allocated memory"),
                    partition=part.rstrip("*"), default_partition=part.endswith("*"),
                    priority_tier=_int(f[8], "PriorityTier") if _clean(f[8]) else 1,
                    priority_job_factor=_int(f[9], "PriorityJobFactor") if _clean(f[9]) else 1,
                    max_time=parse_duration(f[10]) if _clean(f[10]) else UNLIMITED,
                )
            )
        except ValueError as exc:
            out.skipped.append((name, f"{source} line {no}: {exc}"))
    return out


# ---- scontrol ping ---------------------------------------------------------------------------


def ping_is_up(stdout: str) -> bool:
    """``Slurmctld(primary) at HOST is UP`` (rc 0) vs ``... is DOWN`` (rc 1, FACTS g)."""
    return any(" is UP" in ln and "primary" in ln.lower() for ln in stdout.splitlines())
