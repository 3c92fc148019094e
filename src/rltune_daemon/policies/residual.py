"""Bounded reordering: a learned correction on top of the base policy's order.

A *residual* model (``rltune train --reach R``) does not rank the queue on its own. Its actor outputs a
correction ``m`` per job, and the job's key is

    key = R/2 * tanh(m) - r,    r = the job's place (0 = first) in the base policy's order,

highest first. Two corrections differ by less than ``R``, so a job passes fewer than ``R`` of the jobs
the base policy puts ahead of it, and falls behind fewer than ``R`` of those it puts behind it: an
admin can read the model as "the base policy, with local swaps". With ``m = 0`` (the trainer starts
the actor's last layer at zero) the order *is* the base policy's, so PPO starts from the base policy
exactly rather than from an imitation of it, and the validation step can keep the base order when no
correction helped. Because no job moves far, there is no need for the plain actor's age chunks
(``learned.chunk_rank``): the base order (and the starvation guard) already bound how long a job waits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rltune_daemon.domain.arrays import F64, I64, places
from rltune_daemon.domain.queue import QueueView


def base_ranks(base_scores: F64, view: QueueView) -> I64:
    """Each pending job's place in the base policy's order (0 = first): lower score first, then older,
    then lower row, the order the planner and the imitation warm start use."""
    return places(np.lexsort((view.idx, view.table.submit[view.idx], base_scores)))


def reorder_keys(correction: np.ndarray[Any, Any], ranks: np.ndarray[Any, Any], reach: float) -> F64:
    """``R/2 * tanh(m) - r`` (higher first): see the module docstring."""
    m = np.asarray(correction, dtype=np.float64)
    return np.asarray(0.5 * reach * np.tanh(m) - ranks, dtype=np.float64)


def keys_to_scores(keys: F64, ranks: I64) -> F64:
    """Policy scores (lower first) from reorder keys: the job's final place, ties kept in base order."""
    return places(np.lexsort((ranks, -keys))).astype(np.float64)
