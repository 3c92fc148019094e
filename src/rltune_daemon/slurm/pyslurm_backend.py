"""Optional pyslurm reader (``[slurm] reader = "pyslurm"``): the CLI reader with its job read (``squeue
-o``, the largest output of a cycle) replaced by one libslurm call.

pyslurm on PyPI builds only against the Slurm release it targets (25.11; ``slurm.release`` says
whether this cluster runs it): against Debian 12's 22.05 ``pip install pyslurm`` stops with "Slurm
version mismatch". So the CLI reader is the default; this module imports pyslurm only when a
``PyslurmReader`` is created and turns every failure into one ``UserError`` line, and the package never
imports it otherwise, so a missing or broken pyslurm can never break an install.

What comes from where, compared field by field with the CLI reader on a live 25.11
(``tests/slurm/test_slurm_pyslurm_live.py``):

* jobs: ``pyslurm.Jobs.load()``, converted to the records ``squeue -o`` gives. The one difference: a
  user, account, partition or QoS of 64 bytes or more, which the CLI's fixed-width frame cannot hold
  whole (it skips that job), pyslurm reads;
* site factors and multifactor components: ``sprio`` (pyslurm has no priority-factors API);
* per-job and per-task GPU requests, allocated TRES, eligible times: ``squeue -O``. pyslurm 25.11.2
  parses ``tres_per_job`` as ``key=value`` pairs and returns None for the ``gres/gpu:p100:3`` that
  25.11 stores for ``--gpus=p100:3``: through pyslurm such a job asks for no GPU;
* nodes: ``sinfo``. A pyslurm node's allocated GRES come from its allocated TRES, which name GPUs only
  when ``AccountingStorageTRES`` includes ``gres/gpu``: elsewhere every GPU looks free.

Everything after the read (assembly, the integrity checks, ``watch``, ``confirm``) is the CLI reader's own.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

from rltune_daemon.errors import UserError
from rltune_daemon.slurm.errors import SlurmError
from rltune_daemon.slurm.integrity import ReadLimits
from rltune_daemon.slurm.parse import (
    SQUEUE_TEXT_FIELDS,
    JobRecord,
    NodeRecord,
    Parsed,
    PrioRecord,
    TresRecord,
    parse_sinfo_nodes,
    parse_sprio,
    parse_squeue_tres,
)
from rltune_daemon.slurm.reader import SlurmReader, sinfo_argv, sprio_argv, squeue_tres_argv
from rltune_daemon.slurm.runner import SlurmRunner
from rltune_daemon.spans import span

REQUIRED_SLURM = "25.11"
_HINT = ("PyPI pyslurm builds only against Slurm 25.11; use the CLI reader "
         "([slurm] reader = \"cli\", the default)")
DEFAULT_CONF = "/etc/slurm/slurm.conf"
# RPCs of Jobs.load() (job info, then partition info), taken from the runner's RPC bucket under rl_enable
LOAD_RPCS = 2
# squeue prints the pending reason in a 32-byte field (``%32r``); pyslurm's is cut the same way so that
# both readers hand the planner the same text
REASON_BYTES = dict(SQUEUE_TEXT_FIELDS)["r"]


def load_pyslurm(local_slurm: str | None = None) -> ModuleType:
    """Import pyslurm or raise a one-line ``UserError`` saying why and what to use instead."""
    try:
        mod = importlib.import_module("pyslurm")
    except ImportError as exc:
        raise UserError(f"pyslurm reader unavailable ({exc.__class__.__name__}: {exc}); {_HINT}") from None
    except OSError as exc:  # libslurm missing or of another release
        raise UserError(f"pyslurm reader unavailable (cannot load libslurm: {exc}); {_HINT}") from None
    if local_slurm:
        built = str(getattr(mod, "__version__", ""))
        if built and not built.startswith(".".join(local_slurm.split(".")[:2])):
            raise UserError(f"pyslurm {built} does not match the local Slurm {local_slurm}; {_HINT}")
    return mod


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _limit_s(minutes: Any) -> float:
    if minutes is None or (isinstance(minutes, str) and minutes.upper() in {"UNLIMITED", "INFINITE"}):
        return math.inf
    return float(minutes) * 60.0


def _gres(per_node: Any) -> str:
    """pyslurm ``{"gres/gpu:p100": 4}`` -> ``gres/gpu:p100:4`` (squeue ``%b`` as 23.11+ prints it)."""
    if not isinstance(per_node, Mapping):
        return ""
    return ",".join(f"{k}:{v}" for k, v in per_node.items() if "gpu" in str(k))


def array_tasks(spec: str) -> list[str]:
    """``0,2-3%2`` (pyslurm's ``array_tasks_waiting``) -> ``["0", "2", "3"]``; the ``%`` limit is dropped."""
    out: list[str] = []
    for part in spec.split("%", 1)[0].split(","):
        lo, sep, hi = part.partition("-")
        if lo.isdigit() and (not sep or hi.isdigit()):
            out.extend(str(t) for t in range(int(lo), int(hi if sep else lo) + 1))
    return out


def job_records(jobs: Iterable[Any], partitions: Sequence[str] = ()) -> Parsed[JobRecord]:
    """pyslurm ``Job`` objects -> the records ``squeue -r -t PD,R -o`` gives (pending and running; an
    unsplit pending array as one record per waiting task, all with the array's id)."""
    out: Parsed[JobRecord] = Parsed()
    wanted = set(partitions)
    for j in jobs:
        state = _text(j.state).upper()
        parts = tuple(p for p in _text(j.partition).split(",") if p)
        if state not in {"PENDING", "RUNNING"} or (wanted and not wanted & set(parts)):
            continue
        job_id = str(j.id)
        task = j.array_task_id
        tasks = [str(task)] if task is not None else array_tasks(_text(j.array_tasks_waiting))
        memory = j.memory_per_node or j.memory_per_cpu or 0
        for t in tasks or [""]:
            out.listed.append((job_id, state))
            out.records.append(JobRecord(
                job_id=job_id, array_job_id=_text(j.array_id) if t else "", array_task=t, state=state,
                user=_text(j.user_name), account=_text(j.account), partitions=parts, qos=_text(j.qos),
                priority=int(j.priority or 0), nice=int(j.nice or 0),
                submit=float(j.submit_time) if j.submit_time else None,
                start=float(j.start_time) if j.start_time else None,
                time_limit=_limit_s(j.time_limit), nodes=int(j.num_nodes or 1), cpus=int(j.cpus or 0),
                min_memory_mb=int(memory), tres_per_node=_gres(j.gres_per_node),
                oversubscribe=_text(j.resource_sharing).upper() or "OK",
                node_list=_text(j.allocated_nodes) if state == "RUNNING" else "",
                req_nodes=_text(j.required_nodes), exc_nodes=_text(j.excluded_nodes),
                reason=_text(j.state_reason).encode()[:REASON_BYTES].decode(errors="ignore").strip(),
            ))
    return out


class PyslurmReader(SlurmReader):
    """``SlurmReader`` whose job and node reads go through pyslurm (see module docstring). Raises
    ``UserError`` when pyslurm cannot be loaded; a failed load in a cycle is a ``SlurmError``."""

    def __init__(self, runner: SlurmRunner, *, partitions: Sequence[str] = (),
                 limits: ReadLimits | None = None, module: ModuleType | None = None, **kwargs: Any) -> None:
        super().__init__(runner, partitions=partitions, limits=limits, **kwargs)
        if module is None:
            # libslurm reads slurm.conf from this process's environment when pyslurm is imported, and
            # without one it exits the process (fatal: "Could not establish a configuration source")
            conf = runner.slurm_conf or os.environ.get("SLURM_CONF") or DEFAULT_CONF
            if not os.path.isfile(conf):
                raise UserError(f"pyslurm reader: no slurm.conf at {conf}; set [slurm] conf")
            # libslurm reads it once per process: a second cluster in the same process would be asked
            # through the first one's controller ("Unable to contact slurm controller")
            loaded = os.environ.get("SLURM_CONF", conf)
            if "pyslurm" in sys.modules and loaded != conf:
                raise UserError(f"pyslurm reader: this process already reads the Slurm of {loaded}; "
                                f"one cluster per process (start another for {conf})")
            os.environ["SLURM_CONF"] = conf
        self.pyslurm = module if module is not None else load_pyslurm()

    def _outputs(self, parts: Sequence[str]
                 ) -> tuple[Parsed[PrioRecord], Parsed[JobRecord], Parsed[TresRecord], Parsed[NodeRecord]]:
        runner = self.runner
        prio = parse_sprio(runner.run(sprio_argv(parts), encoding="latin-1").stdout)
        if runner.rpc_bucket is not None:
            runner.rpc_bucket.take(LOAD_RPCS)
        try:
            with span("slurm", kind="pyslurm Jobs.load"):  # timed as a read command, which it replaces
                jobs = job_records(self.pyslurm.Jobs.load().values(), parts)
        except Exception as exc:  # pyslurm.RPCError and friends: one line, no traceback
            raise SlurmError(f"pyslurm read failed: {type(exc).__name__}: {exc}") from None
        tres = parse_squeue_tres(runner.run(squeue_tres_argv(parts), encoding="utf-8").stdout)
        nodes = parse_sinfo_nodes(runner.run(sinfo_argv(parts), encoding="utf-8").stdout)
        return prio, jobs, tres, nodes
