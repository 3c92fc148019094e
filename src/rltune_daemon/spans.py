"""Where a cycle's time goes: named spans that a benchmark records and everything else ignores.

The cycle marks its stages (``read``, ``history``, ``plan``, ``apply``, ``save``) and the layers below mark
what they spend inside them (each Slurm command, the features, the actor, the MILP). With no
``Recorder`` active a span costs one global lookup, so the daemon carries them always and ``rltune bench
cycle`` reads them instead of wrapping the daemon's objects. A span records the innermost span open
around it (``parent``), so a Slurm command is known to belong to the read or to the writes.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Span:
    name: str
    seconds: float
    parent: str
    info: dict[str, Any]


@dataclass
class Recorder:
    """Every span closed while it was active, in closing order; ``take`` hands them over and starts anew."""

    spans: list[Span] = field(default_factory=list)
    _open: dict[int, list[str]] = field(default_factory=dict)  # thread -> names of the spans open in it
    _home: int = field(default_factory=threading.get_ident)  # the recording thread
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> list[Span]:
        with self._lock:
            out, self.spans = self.spans, []
        return out

    def innermost(self) -> str:
        """The span open innermost in this thread; a worker thread (commands run side by side) belongs
        to the span the recording thread has open."""
        around = self._open.get(threading.get_ident()) or self._open.get(self._home, [])
        return around[-1] if around else ""


_active: Recorder | None = None


@contextlib.contextmanager
def recording() -> Iterator[Recorder]:
    """Record every span until the block ends (one recorder at a time: a benchmark's)."""
    global _active  # noqa: PLW0603 - the one switch the spans look at
    if _active is not None:
        raise RuntimeError("a span recorder is already active")
    _active = rec = Recorder()
    try:
        yield rec
    finally:
        _active = None


@contextlib.contextmanager
def span(name: str, **info: Any) -> Iterator[None]:
    """Time the block as ``name`` when a recorder is active; ``info`` is kept with it."""
    rec = _active
    if rec is None:
        yield
        return
    parent = rec.innermost()
    stack = rec._open.setdefault(threading.get_ident(), [])
    stack.append(name)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - t0
        stack.pop()
        with rec._lock:
            rec.spans.append(Span(name, seconds, parent, info))


def note(name: str, seconds: float, **info: Any) -> None:
    """Record a duration measured by the caller (a layer that times its work anyway) as a span."""
    rec = _active
    if rec is None:
        return
    parent = rec.innermost()
    with rec._lock:
        rec.spans.append(Span(name, seconds, parent, info))
