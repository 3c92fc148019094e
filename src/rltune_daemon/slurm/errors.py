"""Failures of Slurm commands, classified so that the service can react without parsing messages.

All are ``UserError``s (one line, no traceback in the CLIs). The service loop treats
``ControllerDown`` and ``CommandTimeout`` as "skip this cycle, write nothing".
"""

from __future__ import annotations

from collections.abc import Sequence

from rltune_daemon.errors import UserError


def _cmd(argv: Sequence[str]) -> str:
    """Short command description for messages: the program and its subcommand, never stdin data."""
    return " ".join(argv[:2]) if argv else "?"


class SlurmError(UserError):
    """Base class of every Slurm backend failure."""


class ControllerDown(SlurmError):  # noqa: N818 - names from the design
    """slurmctld unreachable: connection refused, socket timeout, or ``scontrol ping`` DOWN (FACTS g)."""


class PermissionDenied(SlurmError):  # noqa: N818 - names from the design
    """The caller lacks the rights (root, SlurmUser or Operator) for this request (FACTS h)."""


class CommandTimeout(SlurmError):  # noqa: N818 - names from the design
    """Our own wall-clock limit killed the command. For updates the outcome is *unknown*: a request
    that reached a hung controller is applied when it resumes (FACTS g), so re-read before retrying."""

    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        super().__init__(f"{_cmd(argv)} did not finish within {timeout:g} s (killed)")
        self.argv = tuple(argv)
        self.timeout = timeout


class SlurmCommandError(SlurmError):
    """A Slurm command failed for another reason (or is missing); ``rc`` and ``stderr`` kept."""

    def __init__(self, argv: Sequence[str], rc: int, stderr: str, hint: str = "") -> None:
        first = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "no error message")
        msg = f"{_cmd(argv)} failed (rc={rc}): {first}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)
        self.argv = tuple(argv)
        self.rc = rc
        self.stderr = stderr


class CallBudgetExceeded(SlurmError):  # noqa: N818 - names from the design
    """More Slurm calls in one cycle than configured: a bug or a runaway retry, never hammer slurmctld."""


class ParseError(SlurmError, ValueError):
    """Output of a Slurm command did not have the expected shape (wrong Slurm version or format)."""

    def __init__(self, source: str, line: int | None, problem: str) -> None:
        where = f"{source} line {line}" if line is not None else source
        super().__init__(f"cannot parse {where}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem


class SuspectRead(SlurmError):  # noqa: N818 - names what happened, like ControllerDown
    """A read that looks incomplete or inconsistent (truncated output, a queue that disagrees with
    sprio, a sudden drop Slurm does not confirm): the cycle writes nothing. ``reason`` is a short label
    for the metric (``SUSPECT_REASONS``); the message says what was seen."""

    def __init__(self, reason: str, message: str) -> None:
        if reason not in SUSPECT_REASONS:
            raise ValueError(f"unknown suspect-read reason {reason!r}")
        super().__init__(f"suspect read ({reason}): {message}; nothing written this cycle")
        self.reason = reason


SUSPECT_REASONS = ("truncated", "malformed", "sprio_mismatch", "tres_mismatch", "drop", "nodes",
                   "vanished_alive", "metrics")


class InvalidUpdate(SlurmError, ValueError):  # noqa: N818 - names from the design
    """An update was refused before anything was sent to Slurm (bad value, unknown node, bad id)."""
