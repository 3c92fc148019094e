"""Pure parsers for the Slurm 22.05 client outputs the reader asks for (no I/O here).

No text a user controls may shift another field. Slurm prints free text as is (``|``, newlines and
any byte included; seen on 22.05 in account, job name, comment and wckey), so separators alone cannot
delimit it. The squeue and sprio formats therefore print every field that can hold free text (user,
account, partition, QoS, pending reason) LAST and at a fixed width: ``%64a`` prints exactly 64 bytes,
truncated or space-padded (Slurm counts bytes, multi-byte UTF-8 included). The fields before them hold
only ids, numbers, times, states and names Slurm validates at submission (GRES, nodes), never ``|``
or a newline. A record is then matched by position, and the outputs are decoded as latin-1 (one
character per byte) so that positions are byte positions; free text is decoded as UTF-8 afterwards.
A value that fills its whole width may have been cut and is not trusted (the record is skipped).

Errors: an output whose first record does not have the expected shape raises ``ParseError`` (wrong
Slurm version or format); one that stops matching later, or ends inside a record, raises
``SuspectRead`` (the read is incomplete: write nothing). A bad value in one otherwise well-framed
record skips that record and says why (``Parsed.skipped``), so one odd job cannot stop the daemon.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from rltune_daemon.formats.slurm import (
    UNLIMITED,
    parse_duration,
    parse_gres_gpu,
    parse_memory_mb,
    parse_timestamp,
    parse_tres,
)
from rltune_daemon.slurm.errors import ParseError, SuspectRead
from rltune_daemon.slurm.memo import Memo

# Slurm's job-state names (squeue %T), by what they mean for a job the daemon changed.
LIVE_STATES = frozenset({"PENDING", "RUNNING"})
# the job is over: nothing of it can run or queue again (a requeue comes back as PENDING first)
ENDED_STATES = frozenset({
    "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
    "OUT_OF_MEMORY", "REVOKED",
})

# ---- framing ---------------------------------------------------------------------------------


def framed_format(fixed: tuple[str, ...], text: tuple[tuple[str, int], ...], sep: str = "|") -> str:
    """``-o`` format: the fixed fields joined by ``|``, then each free-text letter at its width."""
    return sep.join(fixed) + sep + "".join(f"%{width}{letter}{sep}" for letter, width in text)


def _frame(n_fixed: int, widths: tuple[int, ...]) -> re.Pattern[str]:
    head = r"([^|\n]*)\|" * n_fixed
    tail = "".join(rf"(.{{{w}}})\|" for w in widths)
    return re.compile(head + tail + r"\n", re.DOTALL)


def _text(value: str, width: int) -> tuple[str, bool]:
    """A fixed-width free-text field: (UTF-8 value without the padding, whether it may be cut)."""
    cut = len(value) == width and not value.endswith(" ")
    raw = value.rstrip(" ")
    if not raw.isascii():
        raw = raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return raw, cut


def framed_records(text: str, pattern: re.Pattern[str], source: str) -> Iterator[tuple[int, list[str]]]:
    """``(record number, fields)`` of an output framed by ``pattern`` (see module docstring)."""
    pos, n = 0, 0
    size = len(text)
    while pos < size:
        m = pattern.match(text, pos)
        if m is None:
            after = text[pos:pos + 60]
            last = _first_field(text, pos)
            if "\n" not in text[pos:]:
                raise SuspectRead("truncated", f"{source} output ends inside a record (after {n} records, "
                                  f"at byte {pos} of {size}{last})")
            if n == 0:
                raise ParseError(source, 1, f"expected a record of {pattern.groups} fields, got {after!r}")
            raise SuspectRead("malformed", f"{source} record {n + 1} does not have the expected shape "
                              f"(byte {pos} of {size}{last}: {after!r})")
        n += 1
        yield n, list(m.groups())
        pos = m.end()


def _first_field(text: str, pos: int) -> str:
    head = text[pos:pos + 12].split("|", 1)[0]
    return f", job {head}" if head.isdigit() else ""


_NULLS = frozenset({"", "(null)", "N/A", "n/a", "None"})


def _clean(value: str) -> str:
    v = value.strip()
    return "" if v in _NULLS else v


def _null(text: str) -> str:
    """Free text as the user wrote it (only Slurm's placeholders for "none" become empty)."""
    return "" if text in _NULLS else text


def _int(value: str, what: str) -> int:
    try:
        return int(value)  # int() strips the same whitespace as str.strip()
    except ValueError:
        pass
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
    listed: list[tuple[str, str]] = field(default_factory=list)  # squeue: (id, state) of every record


# ---- squeue -o -------------------------------------------------------------------------------

# squeue -o letters (FACTS e): %A raw job id (what sprio prints and `scontrol update JobId=` takes),
# %F/%K array job/task id, %b tres-per-node (undocumented in 22.05), %h OverSubscribe, %n/%x req/exc
# nodes (-O has no excluded-nodes field in 22.05), %y nice. Free text, last and fixed width: %u user,
# %a account (any string without AccountingStorageEnforce), %P partition(s), %q QoS, %r reason (a
# job_submit plugin may set any text; only its start is read, so 32 bytes do).
SQUEUE_JOB_FIELDS = (
    "%A", "%F", "%K", "%T", "%Q", "%y", "%V", "%S", "%l", "%D", "%C", "%m", "%b", "%h", "%N", "%n", "%x",
)
SQUEUE_TEXT_FIELDS = (("u", 64), ("a", 64), ("P", 128), ("q", 64), ("r", 32))
SQUEUE_JOB_FORMAT = framed_format(SQUEUE_JOB_FIELDS, SQUEUE_TEXT_FIELDS)
_JOB_FRAME = _frame(len(SQUEUE_JOB_FIELDS), tuple(w for _, w in SQUEUE_TEXT_FIELDS))
# free-text fields a cut value would misread (the reason is read by its start only)
_MUST_BE_WHOLE = ("user", "account", "partition", "QoS")


class JobRecord(NamedTuple):
    """One squeue line. Times are epoch seconds; ``time_limit`` is inf for UNLIMITED. (The records of
    one job each are named tuples: immutable like a frozen dataclass, built ~7x faster, which counts
    at 10,000 jobs a cycle.)"""

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


_JOB_ID = re.compile(r"^\d{1,10}$")


def _require_id(job_id: str, no: int, source: str) -> None:
    """A record that does not start with a job id is not a record: the frame is off."""
    if not _JOB_ID.match(job_id):
        problem = f"record {no} starts with {job_id[:20]!r}, not a job id"
        if no == 1:
            raise ParseError(source, no, problem)
        raise SuspectRead("malformed", f"{source} {problem}")


def _job_texts(values: tuple[str, ...]) -> tuple[str, str, tuple[str, ...], str, str] | str:
    """The free-text fields of one record (user, account, partitions, QoS, reason), or why they cannot
    be read (one that fills its width may have been cut)."""
    texts = [_text(v, w) for v, (_, w) in zip(values, SQUEUE_TEXT_FIELDS, strict=True)]
    for (_, cut), what, (_, width) in zip(texts, _MUST_BE_WHOLE, SQUEUE_TEXT_FIELDS, strict=False):
        if cut:
            return f"{what} is {width} bytes or longer and cannot be read whole"
    user, account, partitions, qos, reason = (v for v, _ in texts)
    return (_null(user), _null(account), tuple(p for p in _null(partitions).split(",") if p), _null(qos),
            reason.strip())


_Texts = tuple[str, str, tuple[str, ...], str, str]
# time limit, node count, CPUs, memory, tres-per-node, OverSubscribe, node list, required, excluded nodes
_Shape = tuple[float, int, int, int, str, str, str, str, str]


def _job_texts_of(joined: str) -> _Texts | str:
    """``_job_texts`` of the text fields joined by ``|`` (each is exactly its width, so the split is
    exact whatever the fields hold)."""
    values, pos = [], 0
    for _, width in SQUEUE_TEXT_FIELDS:
        values.append(joined[pos:pos + width])
        pos += width + 1
    return _job_texts(tuple(values))


def _job_shape(f: list[str]) -> _Shape:
    """Fields 8-16 of a record (``ValueError`` for the first bad one, in field order)."""
    limit_text = f[8].strip()
    limit = UNLIMITED if limit_text in {"NOT_SET", "INVALID"} else parse_duration(limit_text)
    nodes = _int(f[9].split("-")[0], "node count")
    cpus = _int(f[10], "cpu count")
    memory = parse_memory_mb(f[11]) if _clean(f[11]) else 0
    return (limit, nodes, cpus, memory, _clean(f[12]), _clean(f[13]) or "OK", _clean(f[14]), _clean(f[15]),
            _clean(f[16]))


def _job_record(f: list[str]) -> JobRecord:
    """One record's ``JobRecord`` (``ValueError`` for the first bad value)."""
    return _JobRecords().record(f)


class _JobRecords:
    """``JobRecord`` from the fields of one record. The parts that repeat across a queue (free text;
    limits, sizes and node lists; timestamps) are kept by text for one output, failures excepted, so
    every record is checked exactly as if it were the only one."""

    def __init__(self) -> None:
        self.texts: dict[str, _Texts | str] = {}
        self.shapes: dict[str, _Shape] = {}
        self.stamps: dict[str, float | None] = {}

    def stamp(self, text: str) -> float | None:
        stamps = self.stamps
        if text in stamps:
            return stamps[text]
        value = stamps[text] = parse_timestamp(text)
        return value

    def record(self, f: list[str]) -> JobRecord:
        # the checks in the order they always ran: the first problem is the one reported
        key = "|".join(f[17:])
        texts = self.texts.get(key)
        if texts is None:
            texts = self.texts[key] = _job_texts_of(key)
        if isinstance(texts, str):
            raise ValueError(texts)
        task = _clean(f[2])
        try:
            priority = int(f[4])
        except ValueError:
            priority = _int(f[4], "priority")
        try:
            nice = int(f[5])
        except ValueError:
            nice = _int(f[5], "nice")
        submit = self.stamp(f[6])
        start = self.stamp(f[7])
        key = "|".join(f[8:17])
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = _job_shape(f)
        return JobRecord(f[0], _clean(f[1]) if task else "", task, f[3].strip(), texts[0], texts[1], texts[2],
                         texts[3], priority, nice, submit, start, *shape, texts[4])


def parse_squeue_jobs(text: str, source: str = "squeue") -> Parsed[JobRecord]:
    """Parse ``squeue -h -r -o SQUEUE_JOB_FORMAT`` decoded as latin-1 (see module docstring)."""
    out: Parsed[JobRecord] = Parsed()
    record = _JobRecords().record
    for no, f in framed_records(text, _JOB_FRAME, source):
        _require_id(f[0], no, source)
        out.listed.append((f[0], f[3].strip()))
        try:
            out.records.append(record(f))
        except ValueError as exc:
            out.skipped.append((f[0].strip(), f"{source} record {no}: {exc}"))
    return out


def render(fixed: tuple[str, ...], text: tuple[tuple[str, int], ...], values: dict[str, str]) -> str:
    """One record of a framed format as Slurm prints it, from values by format letter (``"%a"``),
    missing ones empty, decoded as latin-1: the inverse of the parsers, for tests and the fuzzers."""
    head = "|".join(values.get(k, "") for k in fixed) + "|"
    return head + "".join(_fit(values.get(f"%{c}", ""), w) + "|" for c, w in text) + "\n"


def job_line(values: dict[str, str]) -> str:
    """A ``SQUEUE_JOB_FORMAT`` record (see ``render``)."""
    return render(SQUEUE_JOB_FIELDS, SQUEUE_TEXT_FIELDS, values)


def _fit(value: str, width: int) -> str:
    """``%<width>x``: the UTF-8 bytes cut or space-padded to ``width``, as latin-1 characters."""
    raw = value.encode("utf-8")[:width]
    return raw.decode("latin-1").ljust(width)


# ---- squeue -o '%A|%T|' (queue checks and confirmations) ---------------------------------------

JOB_STATE_FORMAT = "%A|%T|"
_STATE_FRAME = re.compile(r"(\d{1,10})\|([A-Z_]+)\|\n")


def parse_job_states(text: str, source: str = "squeue") -> list[tuple[str, str]]:
    """``(raw job id, state)`` per line of ``squeue -h -o JOB_STATE_FORMAT`` (every field is an id or
    a state name, so any other shape is a format error or a cut output)."""
    return [(f[0], f[1]) for _, f in framed_records(text, _STATE_FRAME, source)]


# ---- squeue -O -------------------------------------------------------------------------------

# squeue -O: per-job and per-task GPU requests exist only here (FACTS e: `--gpus=` is not in %b), and
# tres-alloc gives the job's TOTAL cpu/mem (``%m`` is per CPU or per node with no way to tell). Every
# field is an id, a number or a TRES list Slurm validated at submission.
# EligibleTime: when the job became eligible (N/A while held or waiting on a dependency, later for
# --begin); sprio lists exactly the pending jobs that are eligible, which the reader checks.
SQUEUE_TRES_FIELDS = ("JobID", "tres-per-job", "tres-per-task", "NumTasks", "tres-alloc", "EligibleTime")
SQUEUE_TRES_FORMAT = ",".join(f"{f}:|" for f in SQUEUE_TRES_FIELDS)


class TresRecord(NamedTuple):
    """Per-job GPU requests and the job's total CPUs/memory (``tres-alloc``)."""

    job_id: str
    tres_per_job: str
    tres_per_task: str
    num_tasks: int
    alloc: dict[str, str]
    eligible: float | None = None

    @property
    def cpus(self) -> int | None:
        v = self.alloc.get("cpu")
        return int(v) if v else None

    @property
    def mem_mb(self) -> int | None:
        v = self.alloc.get("mem")
        return parse_memory_mb(v) if v else None


def _fixed_lines(text: str, nfields: int, source: str) -> Iterator[tuple[int, list[str]]]:
    """Lines of an ``-O 'Field:|,...'`` output: exactly ``nfields`` values, each followed by ``|``, the
    first one a job or node name. A first line of another shape is a format error; a later one means the
    output was cut or mangled (``SuspectRead``)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:  # the last line has no newline: cut off
        raise SuspectRead("truncated", f"{source} output ends inside a line (line {len(lines)})")
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != nfields + 1 or parts[-1].strip():
            problem = f"expected {nfields} '|'-terminated fields, got {line[:80]!r}"
            if no == 1:
                raise ParseError(source, no, problem)
            raise SuspectRead("malformed", f"{source} line {no}: {problem}")
        yield no, parts[:-1]


def parse_squeue_tres(text: str, source: str = "squeue -O") -> Parsed[TresRecord]:
    """Parse ``squeue -h -r -O SQUEUE_TRES_FORMAT``; array task lines of one record are merged."""
    out: Parsed[TresRecord] = Parsed()
    seen: set[str] = set()
    stamp = Memo(parse_timestamp)
    tres = Memo(parse_tres)
    for no, f in _fixed_lines(text, len(SQUEUE_TRES_FIELDS), source):
        job_id = f[0].strip()
        if not _JOB_ID.match(job_id):
            if no == 1:
                raise ParseError(source, no, f"job id {job_id!r} is not a raw job id")
            raise SuspectRead("malformed", f"{source} line {no}: job id {job_id[:20]!r} is not a raw job id")
        if job_id in seen:
            continue
        seen.add(job_id)
        try:
            tasks = _clean(f[3])
            per_job, per_task = _clean(f[1]), _clean(f[2])
            num_tasks = _int(tasks, "tasks") if tasks else 1
            alloc = dict(tres(f[4]))  # each record its own dict
            out.records.append(TresRecord(job_id, per_job, per_task, num_tasks, alloc, stamp(f[5])))
        except ValueError as exc:
            out.skipped.append((job_id, f"{source} line {no}: {exc}"))
    return out


def gpus_in_spec(spec: str) -> tuple[int, str]:
    """GPUs and type in a TRES/GRES request: ``gres:gpu:p100:2`` (22.05), ``gres/gpu:p100:2`` (squeue
    ``%b`` and ``tres-per-job`` from 23.11), ``gres/gpu:p100=2`` (``tres-per-task``), ``gpu:2``, lists
    of those; non-GPU items ignored. Empty/N/A -> (0, "")."""
    s = _clean(spec)
    if not s:
        return 0, ""
    total, first_type = 0, ""
    for raw in s.split(","):
        item = raw.strip()
        if item.startswith("gres/gpu") and "=" in item:  # TRES style: gres/gpu[:type]=count
            key, _, count = item.partition("=")
            gtype = key.split(":", 1)[1] if ":" in key else ""
            n = int(count) if count.isdigit() else 1
        else:
            n, gtype = parse_gres_gpu(item)
        total += n
        first_type = first_type or gtype
    return total, first_type


# ---- sprio -----------------------------------------------------------------------------------

# sprio: %i raw id, %Y priority, %S site factor (weight 1), then every weighted factor so that an
# admin-set priority can be recognised (%A age, %F fair-share, %J size, %P partition, %Q QoS, %B assoc,
# %N nice, %T TRES), and %r partition (one row per partition of a multi-partition job) last, fixed width.
SPRIO_FIELDS = ("%i", "%Y", "%S", "%A", "%F", "%J", "%P", "%Q", "%B", "%N", "%T")
SPRIO_TEXT_FIELDS = (("r", 128),)
SPRIO_FORMAT = framed_format(SPRIO_FIELDS, SPRIO_TEXT_FIELDS)
_PRIO_FRAME = _frame(len(SPRIO_FIELDS), (SPRIO_TEXT_FIELDS[0][1],))


class PrioRecord(NamedTuple):
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


def sprio_line(values: dict[str, str]) -> str:
    """A ``SPRIO_FORMAT`` record (see ``render``)."""
    return render(SPRIO_FIELDS, SPRIO_TEXT_FIELDS, values)


def _tres_factor_sum(text: str) -> float:
    total = 0.0
    for value in parse_tres(text).values():
        try:
            total += float(value)
        except ValueError:
            raise ValueError(f"TRES factor is not a number: {value!r}") from None
    return total


def _sprio_partition(value: str) -> str:
    partition, cut = _text(value, SPRIO_TEXT_FIELDS[0][1])
    if cut:
        raise ValueError(f"partition is {SPRIO_TEXT_FIELDS[0][1]} bytes or longer")
    return _null(partition)


def parse_sprio(text: str, source: str = "sprio") -> Parsed[PrioRecord]:
    """Parse ``sprio -h -o SPRIO_FORMAT`` decoded as latin-1. Held jobs, and jobs for ~1 s after a
    release (EligibleTime still Unknown), are not listed at all (FACTS a); an empty queue prints
    nothing (rc 0)."""
    out: Parsed[PrioRecord] = Parsed()
    if text.startswith("Unable to find jobs"):
        return out
    partition_of = Memo(_sprio_partition)
    tres_sum = Memo(_tres_factor_sum)
    for no, f in framed_records(text, _PRIO_FRAME, source):
        job_id = f[0]
        _require_id(job_id, no, source)
        try:
            partition = partition_of(f[11])
            try:
                factors = int(f[3]) + int(f[4]) + int(f[5]) + int(f[6]) + int(f[7]) + int(f[8])
            except ValueError:  # not plain integers: the slow path, which also says which is bad
                factors = sum(_int(v, "factor") for v in f[3:9])
            total = factors + tres_sum(f[10])
            out.records.append(
                PrioRecord(job_id, partition, _int(f[1], "priority"), _int(f[2], "site"), total,
                           _int(f[9], "nice"))
            )
        except ValueError as exc:
            out.skipped.append((job_id, f"{source} record {no}: {exc}"))
    return out


# ---- sinfo -N -------------------------------------------------------------------------------

# sinfo -N: one row per (node, partition) pair; the partition's PriorityTier/PriorityJobFactor/MaxTime
# come along, so no separate partition call is needed (FACTS f: ~6 ms for 5 nodes). Node, GRES and
# partition names come from slurm.conf (the admin), not from users.
SINFO_NODE_FIELDS = (
    "NodeList", "Gres", "GresUsed", "StateLong", "CPUsState", "Memory", "AllocMem",
    "Partition", "PriorityTier", "PriorityJobFactor", "Time",
)
SINFO_NODE_FORMAT = ",".join(f"{f}:|" for f in SINFO_NODE_FIELDS)


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
