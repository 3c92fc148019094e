"""User-facing errors: one line that names the problem and what to do. The CLIs print them without a
traceback and exit with status 2."""

from __future__ import annotations


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
