"""structlog setup: JSON lines on stderr (journald keeps them; ``jq`` reads them) or a console format,
which ``format = "auto"`` (the default) picks when stderr is a terminal.

One canonical ``event="cycle"`` line per cycle carries everything an operator asks first (jobs seen,
changed, skipped, seconds, fallback, errors), so most questions are a single ``journalctl | jq``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def choose_format(fmt: str, stream: TextIO) -> str:
    """``json`` or ``console`` for the configured ``fmt``: ``auto`` is console when ``stream`` is a
    terminal (someone reading a dry run around its table) and JSON otherwise (journald, a pipe, a file:
    what ``jq`` and the replay's log reader parse)."""
    if fmt != "auto":
        return fmt
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        tty = False
    return "console" if tty else "json"


def configure(level: str = "info", fmt: str = "json", stream: TextIO | None = None) -> None:
    """(Re)configure the process-wide structlog pipeline; ``fmt``: json, console or auto
    (``choose_format``)."""
    out = stream if stream is not None else sys.stderr
    renderer: Any = (structlog.processors.JSONRenderer(sort_keys=False) if choose_format(fmt, out) == "json"
                     else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )


def get_logger() -> Any:
    """The daemon's logger (``Any``: structlog's bound loggers are dynamically typed)."""
    return structlog.get_logger("rltune-daemon")
