"""The fixed-formula baselines of paper Table 5 (RLScheduler's set). Scores are lower-first.

``st`` submit time, ``rt`` requested time, ``wt`` wait since submit, ``nt`` requested GPUs. Two guards
keep the formulas finite on GPU traces, where most jobs use one GPU: UNICEP divides by
``log2(nt + 1)`` instead of ``log2(nt)`` (which is 0 for a 1-GPU job), and F1 takes ``log10`` of
``max(st, 1)`` and ``max(rt, 1)``. Both are documented in docs/policies.md.
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.domain.arrays import F64
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.policies.base import Policy


class FCFS(Policy):
    """First come, first served: score = st."""

    name = "fcfs"
    static = True

    def scores(self, view: QueueView) -> F64:
        return view.table.submit[view.idx].astype(np.float64)


class SJF(Policy):
    """Shortest (requested) job first: score = rt."""

    name = "sjf"
    static = True

    def scores(self, view: QueueView) -> F64:
        return view.requested


class WFP3(Policy):
    """score = -(wt / rt)^3 * nt: long-waiting, short and large jobs first."""

    name = "wfp3"

    def scores(self, view: QueueView) -> F64:
        return -((view.wait / view.requested) ** 3) * view.size


class UNICEP(Policy):
    """score = -wt / (log2(nt + 1) * rt): long-waiting, short and small jobs first."""

    name = "unicep"

    def scores(self, view: QueueView) -> F64:
        return -view.wait / (np.log2(view.size + 1.0) * view.requested)


class F1(Policy):
    """score = log10(rt) * nt + 870 * log10(st) (Carastan-Santos & de Camargo, SC'17)."""

    name = "f1"
    static = True

    def scores(self, view: QueueView) -> F64:
        st = np.maximum(view.table.submit[view.idx], 1.0)
        return np.log10(view.requested) * view.size + 870.0 * np.log10(st)
