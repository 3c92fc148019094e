"""structlog setup: JSON lines on stderr (journald keeps them; ``jq`` reads them) or a console format.

One canonical ``event="cycle"`` line per cycle carries everything an operator asks first (jobs seen,
changed, skipped, seconds, fallback, errors), so most questions are a single ``journalctl | jq``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure(level: str = "info", fmt: str = "json", stream: TextIO | None = None) -> None:
    """(Re)configure the process-wide structlog pipeline."""
    out = stream if stream is not None else sys.stderr
    renderer: Any = (structlog.processors.JSONRenderer(sort_keys=False) if fmt == "json"
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
