"""Microsoft Philly (ATC'19), the 82,247-job subset shipped with the adaptdl OSDI'21 artifact.

Real data: submit time, run time, GPU count and virtual cluster (VC) per job; no user, no requested
time (the ``user`` estimate model fills it). The VC is the only tenant identity in the trace, so it
serves as both ``user`` and ``account``. Rows are not sorted upstream; we sort stably by timestamp.
The 65 exact duplicate rows are kept: nothing in the data tells them apart from distinct submissions
of the same job shape in the same second, which is common for hyper-parameter sweeps.

Cluster: one partition of 8 x P100 nodes. Philly had 552 servers (Table 4 of the RLTune paper) but
this subset is a fraction of its load, so, like HeliosArtifact's QSSF simulator, we take the node count
per VC from ``philly_vc_nodes.csv`` (11 VCs, 352 nodes) and scale it by ``PHILLY_SCALE`` to restore
contention: ``sum(ceil(vc_nodes * scale))`` nodes (23 nodes, 184 GPUs at the default 1/16; RLTune's
own Philly simulation has 192 GPUs). At 1/16 the whole 109-day trace is overloaded (offered load
2.0): it serves as a speed benchmark; evaluation windows of 1,024 jobs queue without diverging.
"""

from __future__ import annotations

import csv
import math
import re

import numpy as np

from rltune_daemon.domain.cluster import DEFAULT_PARTITION, ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError
from rltune_daemon.traces.assemble import RawJobs, assemble
from rltune_daemon.traces.context import LoadContext
from rltune_daemon.traces.limits import MAX_COUNT, seconds
from rltune_daemon.traces.resources import data_text, file_text, lines

PHILLY_SCALE = 1 / 16
"""Fraction of each VC's nodes simulated, chosen for FCFS contention in the evaluation windows
(docs/traces.md, "Contention under FCFS")."""

GPU_TYPE = "p100"
NODE_GPUS, NODE_CPUS, NODE_MEM_MB = 8, 48, 480_000
HEADER = ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"]
# numpy's datetime64 parser also takes "", "NaT" (-2^63 s), "today" and "now" (the day of the load)
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}")


def vc_nodes(text: str | None = None) -> dict[str, int]:
    """Nodes per VC from ``philly_vc_nodes.csv`` (``vc,node num``)."""
    rows = list(csv.reader(lines(text if text is not None else data_text("philly_vc_nodes.csv"))))
    return {r[0]: int(r[1]) for r in rows[1:] if r}


def cluster(scale: float = PHILLY_SCALE) -> ClusterSpec:
    """``sum over VCs of ceil(nodes * scale)`` identical 8 x P100 nodes in one partition."""
    count = sum(math.ceil(n * scale) for n in vc_nodes().values())
    nodes = tuple(
        NodeSpec(f"philly-{i:03d}", GPU_TYPE, NODE_GPUS, NODE_CPUS, NODE_MEM_MB, (DEFAULT_PARTITION,))
        for i in range(1, count + 1)
    )
    return ClusterSpec(
        "philly",
        nodes,
        (PartitionSpec(DEFAULT_PARTITION),),
        notes=f"Philly VC node counts x {scale:g}, rounded up per VC",
    )


def parse(text: str, path: str) -> RawJobs:
    """Parse the adaptdl ``philly.csv`` format; every malformed row is an ``InputFileError``."""
    reader = csv.reader(lines(text))
    stamps: list[str] = []
    dur: list[float] = []
    gpus: list[int] = []
    vcs: list[str] = []
    starts: list[int] = []  # line each row starts on: blank lines and quoted line breaks shift rows
    try:
        header = next(reader, None)
        if header is None or [h.strip() for h in header[:5]] != HEADER:
            raise InputFileError(
                path, 1, f"expected header {','.join(HEADER)}", "is this the adaptdl philly.csv?"
            )
        end = reader.line_num
        for row in reader:
            line, end = end + 1, reader.line_num
            if not row:
                continue
            try:
                if len(row) != len(header):  # an unquoted ',' in a field would shift the ones after it
                    raise IndexError
                stamps.append(row[0])
                dur.append(seconds(float(row[1]), "duration"))
                gpus.append(int(row[2]))
                vcs.append(row[4])
            except (ValueError, IndexError):
                raise InputFileError(
                    path,
                    line,
                    f"bad row {','.join(row)[:80]!r}",
                    "want timestamp,duration,num_gpus,gpu_time,cluster",
                ) from None
            starts.append(line)
            if not _STAMP.fullmatch(row[0]):
                raise InputFileError(path, line, f"bad timestamp {row[0][:40]!r}", "want YYYY-MM-DD HH:MM:SS")
            if gpus[-1] < 1:
                raise InputFileError(path, line, f"num_gpus must be >= 1, got {row[2][:20]}")
            if gpus[-1] > MAX_COUNT:  # must fit the int64 column
                raise InputFileError(path, line, f"num_gpus {row[2][:20]} is more than {MAX_COUNT:,}")
    except csv.Error as exc:  # e.g. a field past csv.field_size_limit(): an unclosed quote
        raise InputFileError(path, reader.line_num, f"not a readable CSV: {exc}") from None
    try:
        submit = np.array(stamps, dtype="datetime64[s]").astype(np.int64).astype(np.float64)
    except ValueError:
        bad = next(i for i, s in enumerate(stamps) if not _is_stamp(s))
        raise InputFileError(
            path, starts[bad], f"bad timestamp {stamps[bad]!r}", "want YYYY-MM-DD HH:MM:SS"
        ) from None
    g = np.array(gpus, dtype=np.int64)
    return RawJobs(
        ids=[f"philly-{i}" for i in range(1, len(stamps) + 1)],  # data row number: stable, traceable
        submit=submit,
        runtime=np.array(dur, dtype=np.float64),
        gpus=g,
        user=vcs,
        account=vcs,
        partition=[DEFAULT_PARTITION] * len(vcs),
    )


def _is_stamp(s: str) -> bool:
    try:
        np.datetime64(s, "s")
    except ValueError:
        return False
    return True


def load(ctx: LoadContext) -> Workload:
    scale = ctx.opts.number("scale", PHILLY_SCALE, lo=1e-6, hi=1.0)
    path = ctx.opts.text("path")
    cap = ctx.opts.seconds("max_time", ctx.default_cap)
    ctx.opts.finish()
    source = path or "rltune_daemon/data/philly.csv.xz"
    raw = parse(file_text(path) if path else data_text("philly.csv.xz"), source)
    spec = ctx.cluster or cluster(scale)
    raw = ctx.partitions(raw, spec)
    return assemble(
        "philly",
        spec,
        raw,
        estimates=ctx.estimates(raw, "philly"),
        seed=ctx.seed,
        cap=cap,
        meta={"source": source, "scale": scale, "user_is_vc": True},
    )
