"""Heuristic feature sampling (paper §3.2): fixed-width actor (8) and critic (5) vectors per job.

Each slot has a fixed meaning (``schema.ACTOR_SLOTS``/``CRITIC_SLOTS``); a slot may pick the raw or the
engineered variant of a cue depending on the situation (e.g. job size when the cluster is fragmented,
urgency when it is not), and the ``fragmentation`` slot tells the network which one it holds. Sampling is
a pure function of the normalised raw matrix, so a trainer may store raw features and re-sample.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from rltune_daemon.features.schema import FEATURES, INDEX, Slot

F32 = npt.NDArray[np.float32]


def _threshold(name: str, natural: float) -> np.float32:
    """``natural`` in the normalised (float32) scale of feature ``name``, computed exactly as the raw
    column is, so equality compares equal."""
    spec = FEATURES[INDEX[name]]
    return np.float32(spec.norm.apply(np.array([natural], dtype=np.float64))[0])


def _terms(raw: F32, terms: tuple[tuple[str, float], ...]) -> F32:
    out = np.zeros(raw.shape[0], dtype=np.float32)
    for name, weight in terms:
        out += np.float32(weight) * raw[:, INDEX[name]]
    return out


def sample(raw: F32, slots: tuple[Slot, ...]) -> F32:
    """One column per slot (a loop over slots, vectorised over jobs)."""
    out = np.empty((raw.shape[0], len(slots)), dtype=np.float32)
    for j, slot in enumerate(slots):
        lo = _terms(raw, slot.lo)
        if slot.cond:
            hi = _terms(raw, slot.hi)
            out[:, j] = np.where(raw[:, INDEX[slot.cond]] >= _threshold(slot.cond, slot.threshold), hi, lo)
        else:
            out[:, j] = lo
    return out
