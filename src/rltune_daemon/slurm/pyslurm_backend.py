"""Optional pyslurm backend behind the same ``SnapshotReader`` protocol as the CLI reader.

pyslurm on PyPI builds only against the Slurm release it targets (25.11): on Debian 12 (Slurm 22.05)
``pip install pyslurm`` stops with "Slurm version mismatch: requires Slurm 25.11, found 22.5", and
with the check patched out the C build fails on types 22.05 lacks (``list_t``,
``slurm_node_alias_addrs_t``). So the CLI backend is the default; this module imports pyslurm only
when a ``PyslurmReader`` is created and turns every failure into one ``UserError`` line. It is never
imported by the package itself, so a missing or broken pyslurm can never break an install.

Jobs, nodes and partitions come from pyslurm (one RPC each); site factors still come from ``sprio``
(pyslurm has no priority-factors API). Records are converted to the CLI parser's record types and
go through the same ``assemble.build_snapshot``. The attribute mapping follows pyslurm 25.x and is
not exercised against a live 25.11 controller here (no such Slurm on Debian 12).
"""

from __future__ import annotations

import importlib
import math
import re
import time
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from rltune_daemon.domain import Snapshot
from rltune_daemon.domain.updates import ReadInfo
from rltune_daemon.errors import UserError
from rltune_daemon.slurm.assemble import UNLIMITED_DEFAULT_S, build_snapshot
from rltune_daemon.slurm.parse import JobRecord, NodeRecord, PrioRecord, TresRecord, gpus_in_spec, parse_sprio
from rltune_daemon.slurm.reader import sprio_argv
from rltune_daemon.slurm.runner import SlurmRunner

REQUIRED_SLURM = "25.11"
_HINT = (
    "PyPI pyslurm builds only against Slurm 25.11 and Debian 12 ships 22.05; "
    "use the CLI backend (the default)"
)


def load_pyslurm(local_slurm: str | None = None) -> ModuleType:
    """Import pyslurm or raise a one-line ``UserError`` saying why and what to use instead."""
    try:
        mod = importlib.import_module("pyslurm")
    except ImportError as exc:
        raise UserError(f"pyslurm backend unavailable ({exc.__class__.__name__}: {exc}); {_HINT}") from None
    except OSError as exc:  # libslurm missing or of another release
        raise UserError(f"pyslurm backend unavailable (cannot load libslurm: {exc}); {_HINT}") from None
    if local_slurm:
        built = str(getattr(mod, "__version__", ""))
        if built and not built.startswith(".".join(local_slurm.split(".")[:2])):
            raise UserError(
                f"pyslurm {built} does not match the local Slurm {local_slurm}; {_HINT}"
            )
    return mod


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return default


def _gres_spec(gres: Any) -> str:
    """pyslurm GRES dict ``{"gpu:p100": 4}`` / ``{"gpu": 2}`` -> ``gpu:p100:4,...``."""
    if isinstance(gres, Mapping):
        return ",".join(f"{k}:{v}" for k, v in gres.items() if str(k).startswith("gpu"))
    return str(gres or "")


def _nodes_str(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value or "")


def _minutes(value: Any) -> float:
    if value is None or (isinstance(value, str) and value.upper() in {"UNLIMITED", "INFINITE"}):
        return math.inf
    return float(value) * 60.0


def job_records(jobs: Iterable[Any]) -> tuple[list[JobRecord], dict[str, TresRecord]]:
    """pyslurm ``Job`` objects -> the CLI reader's records (pending and running only)."""
    recs: list[JobRecord] = []
    tres: dict[str, TresRecord] = {}
    for j in jobs:
        state = str(_get(j, "state", default="")).upper()
        if state not in {"PENDING", "RUNNING"}:
            continue
        job_id = str(_get(j, "id", "job_id"))
        task = _get(j, "array_task_id")
        cpus = int(_get(j, "cpus", default=0))
        mem = _get(j, "memory")
        recs.append(JobRecord(
            job_id=job_id,
            array_job_id=str(_get(j, "array_id", default="")) if task is not None else "",
            array_task=str(task) if task is not None else "",
            state=state,
            user=str(_get(j, "user_name", default="")),
            account=str(_get(j, "account", default="")),
            partitions=tuple(p for p in str(_get(j, "partition", default="")).split(",") if p),
            qos=str(_get(j, "qos", default="")),
            priority=int(_get(j, "priority", default=0)),
            nice=int(_get(j, "nice", default=0)),
            submit=_get(j, "submit_time"),
            start=_get(j, "start_time"),
            time_limit=_minutes(_get(j, "time_limit")),
            nodes=int(_get(j, "num_nodes", default=1)),
            cpus=cpus,
            min_memory_mb=int(mem or 0),
            tres_per_node=_gres_spec(_get(j, "gres_per_node")),
            oversubscribe=str(_get(j, "shared", "oversubscribe", default="OK")).upper(),
            node_list=_nodes_str(_get(j, "allocated_nodes", "nodes")) if state == "RUNNING" else "",
            req_nodes=_nodes_str(_get(j, "required_nodes")),
            exc_nodes=_nodes_str(_get(j, "excluded_nodes")),
            reason=str(_get(j, "state_reason", default="")),
        ))
        alloc = {"cpu": str(cpus)} | ({"mem": f"{int(mem)}M"} if mem else {})
        tres[job_id] = TresRecord(job_id, _gres_spec(_get(j, "gpus", "tres_per_job")), "", 1, alloc)
    return recs, tres


def _count_gpus(spec: str) -> tuple[int, str]:
    return gpus_in_spec(re.sub(r"\(.*?\)", "", spec))


def node_records(nodes: Iterable[Any], partitions: Iterable[Any]) -> list[NodeRecord]:
    """pyslurm ``Node``/``Partition`` objects -> one NodeRecord per (node, partition)."""
    parts = {str(_get(p, "name")): p for p in partitions}
    out: list[NodeRecord] = []
    for n in nodes:
        gpus, gtype = _count_gpus(_gres_spec(_get(n, "configured_gres")))
        used, _ = _count_gpus(_gres_spec(_get(n, "allocated_gres")))
        names = [str(p) for p in (_get(n, "partitions", default=[]) or [])] or [""]
        for pname in names:
            p = parts.get(pname)
            out.append(NodeRecord(
                name=str(_get(n, "name")), gpus=gpus, gpu_type=gtype, gpus_alloc=used,
                state=str(_get(n, "state", default="")).lower(),
                cpus=int(_get(n, "total_cpus", "cpus", default=0)),
                cpus_alloc=int(_get(n, "allocated_cpus", default=0)),
                mem_mb=int(_get(n, "real_memory", default=0)),
                mem_alloc_mb=int(_get(n, "allocated_memory", default=0)),
                partition=pname, default_partition=bool(_get(p, "is_default", default=False)),
                priority_tier=int(_get(p, "priority_tier", default=1)),
                priority_job_factor=int(_get(p, "priority_job_factor", default=1)),
                max_time=_minutes(_get(p, "max_time")),
            ))
    return out


class PyslurmReader:
    """``SnapshotReader`` on pyslurm (see module docstring). Raises ``UserError`` when unavailable."""

    def __init__(self, runner: SlurmRunner, *, unlimited_s: float = UNLIMITED_DEFAULT_S,
                 module: ModuleType | None = None) -> None:
        self.runner = runner
        self.unlimited_s = unlimited_s
        self.pyslurm = module if module is not None else load_pyslurm()
        self._last: ReadInfo | None = None

    @property
    def last(self) -> ReadInfo | None:
        return self._last

    def read(self) -> Snapshot:
        t0 = time.monotonic()
        self.runner.begin_cycle()
        self.runner.require_up()
        clock = time.time()
        try:
            jobs = self.pyslurm.Jobs.load().values()
            nodes = self.pyslurm.Nodes.load().values()
            parts = self.pyslurm.Partitions.load().values()
        except Exception as exc:  # pyslurm.RPCError and friends: one line, no traceback
            raise UserError(f"pyslurm read failed: {exc}") from None
        recs, tres = job_records(jobs)
        prio: dict[str, list[PrioRecord]] = {}
        for p in parse_sprio(self.runner.run(sprio_argv(), encoding="latin-1").stdout).records:
            prio.setdefault(p.job_id, []).append(p)
        snap, info = build_snapshot(clock, recs, tres, prio, node_records(nodes, parts),
                                    unlimited_s=self.unlimited_s, source="pyslurm")
        info.calls = self.runner.calls_this_cycle + 3
        info.seconds = time.monotonic() - t0
        self._last = info
        return snap
