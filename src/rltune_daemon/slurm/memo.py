"""``Memo``: a pure parser's results kept by input text for one Slurm output."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_MISSING = object()


class Memo(Generic[T]):
    """A pure parser's results by input text, kept for one output: limits, sizes, timestamps, names and
    GRES specs repeat across thousands of records. A value the parser rejects is not kept, so it raises
    the same ``ValueError`` again for each record that holds it."""

    __slots__ = ("fn", "seen")

    def __init__(self, fn: Callable[[str], T]) -> None:
        self.fn = fn
        self.seen: dict[str, T] = {}

    def __call__(self, text: str) -> T:
        value = self.seen.get(text, _MISSING)
        if value is _MISSING:
            value = self.seen[text] = self.fn(text)
        return value  # type: ignore[return-value]
