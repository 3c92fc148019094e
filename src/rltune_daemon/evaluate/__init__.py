"""Offline evaluation: policies on seeded windows of a trace's held-out tail, in parallel."""

from rltune_daemon.evaluate.runner import EvalConfig, evaluate
from rltune_daemon.evaluate.windows import heldout_windows

__all__ = ["EvalConfig", "evaluate", "heldout_windows"]
