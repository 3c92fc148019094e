"""``load_workload``: one entry point for named traces and files a user brings.

A ``spec`` that is one of ``TRACE_NAMES`` selects a bundled trace or generator; anything else is a path
whose format is detected from its extension and first line (SWF, ``sacct -P`` export, plain CSV).
A ``cluster`` given as a string is a cluster file or, where no such file exists, the name of a bundled
trace whose default cluster to use (``load_cluster``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError, UserError
from rltune_daemon.traces import alibaba, clusterfile, csvfile, helios, openb, philly, sacct, swf, testbed
from rltune_daemon.traces.context import LoadContext
from rltune_daemon.traces.options import Options
from rltune_daemon.traces.resources import data_text, file_text

Loader = Callable[[LoadContext], Workload]


@dataclass(frozen=True)
class Bundled:
    """A named trace: its loader, the default site maximum time limit for the user estimate model (s),
    a one-line summary, and its default cluster (what the loader uses without options), which
    ``--cluster NAME`` lends to another trace."""

    load: Loader
    cap: float
    summary: str
    cluster: Callable[[], ClusterSpec]


def _openb_cluster() -> ClusterSpec:
    return openb.cluster(data_text(openb.NODE_FILE), f"rltune_daemon/data/{openb.NODE_FILE}")


_NAMED: dict[str, Bundled] = {
    "philly": Bundled(
        philly.load, 7 * 86400.0, "Microsoft Philly 2017, 82,247 real jobs on 23 x 8 P100", philly.cluster
    ),
    "helios": Bundled(
        helios.load,
        7 * 86400.0,
        "SenseTime Helios (Venus) statistics, generated; 5 VCs of 8 V100 nodes",
        helios.cluster,
    ),
    "alibaba": Bundled(
        alibaba.load,
        7 * 86400.0,
        "Alibaba PAI 2020 machines (1/80 slice) + generated jobs",
        alibaba.cluster,
    ),
    "alibaba-openb": Bundled(
        openb.load,
        7 * 86400.0,
        "Alibaba GPU 2023 (openb) real pod list on a 1/100 node slice",
        _openb_cluster,
    ),
    "testbed": Bundled(
        testbed.load,
        4 * 3600.0,
        "RLTune §5.6: 1,024 DL jobs on the local 13-GPU Slurm testbed",
        testbed.cluster,
    ),
}

TRACE_NAMES: tuple[str, ...] = tuple(_NAMED)


def describe_traces() -> dict[str, str]:
    """Name -> one-line summary, for ``rltune trace list``."""
    return {name: bundled.summary for name, bundled in _NAMED.items()}


def load_cluster(spec: str) -> ClusterSpec:
    """The cluster ``--cluster spec`` names: a cluster file (``traces.clusterfile``), else the default
    cluster of the bundled trace called ``spec``. A file wins over a name, so a file called ``philly``
    in the working directory is still read; a spec that is neither is one line listing the names."""
    path = Path(spec)
    if path.is_file():
        return clusterfile.load(path)
    named = _NAMED.get(spec.lower())
    if named is not None:
        return named.cluster()
    if path.exists():  # a directory: file_text says so in its own words
        return clusterfile.load(path)
    raise UserError(
        f"--cluster {spec}: no such cluster file or bundled cluster name "
        f"(names: {', '.join(TRACE_NAMES)}; or a cluster file, docs/traces.md)"
    )


def load_workload(
    spec: str,
    *,
    estimates: str | None = None,
    seed: int = 0,
    cluster: ClusterSpec | str | None = None,
    **opts: Any,
) -> Workload:
    """Load a named trace or a trace file (see module docstring and docs/traces.md).

    ``estimates``: ``oracle`` (limit = runtime), ``user`` (modelled requests) or ``trace`` (the file's own
    limits); None picks ``trace`` where the source has requested times, else ``user``. ``cluster`` replaces
    the trace's cluster: a ``ClusterSpec``, a cluster file path or a bundled trace's name
    (``load_cluster``).
    """
    if seed < 0:
        raise UserError(f"seed must be >= 0, got {seed}")
    spec_cluster = load_cluster(cluster) if isinstance(cluster, str) else cluster
    named = _NAMED.get(spec.lower())
    if named is not None:
        ctx = LoadContext(Options(spec.lower(), opts), seed, estimates, spec_cluster, named.cap)
        return _chosen(named.load(ctx), estimates)
    path = Path(spec)
    if not path.exists():
        raise UserError(f"{spec}: no such trace file or trace name (names: {', '.join(TRACE_NAMES)})")
    text = file_text(path)
    kind = detect_format(path, text)
    ctx = LoadContext(Options(f"{path.name} ({kind})", opts), seed, estimates, spec_cluster)
    if kind == "swf":
        return _chosen(swf.load(ctx, text, str(path)), estimates)
    if kind == "sacct":
        return _chosen(sacct.load(ctx, text, str(path)), estimates)
    return _chosen(csvfile.load(ctx, text, str(path)), estimates)


def _chosen(workload: Workload, estimates: str | None) -> Workload:
    """Record whether the caller named the estimate model or the trace's default picked it: a file
    without requested times silently gets the user model otherwise, and the reports say which ran."""
    workload.meta.setdefault("estimates", {})["chosen"] = "default" if estimates is None else "asked"
    return workload


def detect_format(path: Path, text: str) -> str:
    """``swf``, ``sacct`` or ``csv`` from the extension, else from the first non-blank line."""
    name = path.name.lower()
    for suffix in (".xz", ".gz", ".bz2"):
        name = name.removesuffix(suffix)
    if name.endswith(".swf"):
        return "swf"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if first.startswith(";"):
        return "swf"
    if "|" in first and "jobid" in first.lower().split("|"):
        return "sacct"
    cols = [c.strip().lower() for c in first.split(",")]
    if name.endswith(".csv") or {"id", "submit", "runtime", "gpus"} <= set(cols):
        return "csv"  # the CSV parser names missing or unknown columns
    # a malformed input file like any other: callers that catch InputFileError see this one too
    raise InputFileError(
        str(path),
        None,
        f"unrecognised trace format (first line {first[:60]!r}); expected an SWF file (*.swf), "
        "a 'sacct -P' export with a JobID|... header, or a CSV with header id,submit,runtime,gpus,...",
    )
