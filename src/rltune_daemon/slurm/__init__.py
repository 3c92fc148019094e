"""Slurm CLI backend: read pending/running jobs and node GRES state; apply Plans through scontrol.

Modules: ``runner`` (argv-only command runner with timeouts, call budget, classified errors),
``parse`` (pure parsers of the pipe formats), ``assemble`` (records -> ``Snapshot``), ``reader``
(``SlurmReader`` and the ``SnapshotReader`` protocol), ``writer`` (validated batch updates through one
``scontrol``), ``localcluster`` (the project's local Slurm for tests and the demo), ``pyslurm_backend``
(optional). Slurm's text formats (durations, TRES, host lists) are parsed in ``formats.slurm``, which
the trace loaders share. Slurm behaviour is cited as "FACTS x": sections of the lab report on Slurm
22.05 kept with the design notes.
"""

from rltune_daemon.domain.updates import ApplyResult, JobResult, JobUpdate, ReadInfo, UpdateStatus
from rltune_daemon.slurm.errors import (
    CallBudgetExceeded,
    CommandTimeout,
    ControllerDown,
    InvalidUpdate,
    ParseError,
    PermissionDenied,
    SlurmCommandError,
    SlurmError,
)
from rltune_daemon.slurm.reader import SlurmReader, SnapshotReader
from rltune_daemon.slurm.runner import SlurmRunner
from rltune_daemon.slurm.writer import SlurmWriter

__all__ = [
    "ApplyResult",
    "CallBudgetExceeded",
    "CommandTimeout",
    "ControllerDown",
    "InvalidUpdate",
    "JobResult",
    "JobUpdate",
    "ParseError",
    "PermissionDenied",
    "ReadInfo",
    "SlurmCommandError",
    "SlurmError",
    "SlurmReader",
    "SlurmRunner",
    "SlurmWriter",
    "SnapshotReader",
    "UpdateStatus",
]
