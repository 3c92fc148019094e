"""SIGTERM handled like Ctrl-C by commands that start clusters and jobs, so that their ``finally``
blocks (cancel their jobs, stop their cluster) run whichever way they are stopped."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block SIGTERM raises ``KeyboardInterrupt`` in the main thread (elsewhere: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
