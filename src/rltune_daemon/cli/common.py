"""Shared CLI plumbing: error handling and JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from rltune_daemon.errors import UserError


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


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))
