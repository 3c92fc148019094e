"""``paused_gc()``: no cyclic garbage collection while a cycle reads the queue or decides.

A read of 10,000 jobs builds a few hundred thousand small objects (records, jobs, states, plan entries)
and keeps most of them until the cycle ends, none of them in a reference cycle. Each of them counts
towards the collector's thresholds, so it runs hundreds of times per read and scans the survivors, and
the daemon's long-lived objects (the undo record, the model) with them: a quarter to a third of the
read's Python time, for nothing to collect. Reference counting still frees everything as usual; the
collector runs again, on its own schedule, as soon as the block ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The block runs without cyclic collection; a block inside another leaves it to the outer one."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
