"""User-facing errors: one line that names the problem and what to do. The CLIs print them without a
traceback and exit with status 2 (``run_guarded``, shared by ``rltune``, ``rltune-daemon`` and the
replay's daemon process)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


class UserError(Exception):
    """Bad input or environment the user can fix. ``str(err)`` is the whole message."""


class InputFileError(UserError):
    """A malformed input file; the message names the file, the line and the problem."""

    def __init__(self, path: str, line: int | None, problem: str, hint: str = "") -> None:
        where = f"{path}:{line}" if line is not None else path
        msg = f"{where}: {problem}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)
        self.path = path
        self.line = line
        self.problem = problem


def run_guarded(fn: Callable[[], int]) -> int:
    """Run a command; a ``UserError`` becomes one line on stderr and exit status 2, never a traceback."""
    try:
        return fn()
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and friends: stop quietly, like coreutils
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
