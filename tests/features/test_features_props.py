"""Properties on arbitrary queues and cluster states (hypothesis): finite, bounded, fixed widths, and
consistent with the placement code's own notion of shapes and of "fits now"."""

from __future__ import annotations

import numpy as np
from feature_helpers import random_views
from hypothesis import given

from rltune_daemon import features
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.features.groups import pending_shapes
from rltune_daemon.features.schema import INDEX
from rltune_daemon.placement.allocate import candidate_nodes, fits, live_view
from rltune_daemon.placement.shapes import EligibilityIndex, job_shapes


@given(random_views())
def test_finite_bounded_fixed_width(view: QueueView) -> None:
    fs = features.build(view)
    n = len(view.idx)
    assert fs.raw.shape == (n, 18) and fs.actor.shape == (n, 9) and fs.critic.shape == (n, 5)
    for m in (fs.raw, fs.actor, fs.critic):
        assert m.dtype == np.float32 and np.isfinite(m).all()
    assert fs.raw.min() >= -1.0 and fs.raw.max() <= 5.0
    assert fs.actor.min() >= -1.0 and fs.actor.max() <= 6.0  # flexibility = can_now + num_ways
    assert np.array_equal(fs.actor, features.actor_features(view))
    assert np.array_equal(fs.critic, features.critic_features(view))


@given(random_views())
def test_shapes_and_fits_agree_with_placement(view: QueueView) -> None:
    assert view.cluster is not None
    cl, table, idx = view.cluster, view.table, view.idx
    elig = EligibilityIndex.build(cl)
    ref = job_shapes(table, elig)
    mine = pending_shapes(table, idx, elig)
    for name in ("k", "chunk", "cpus_node", "mem_node"):
        assert np.array_equal(getattr(mine, name), getattr(ref, name)[idx]), name
    nat = features.natural_features(view)
    free = live_view(cl)
    for i, row in enumerate(idx):
        count = int(candidate_nodes(cl, elig, ref, int(row), free).sum())
        assert nat[i, INDEX["can_schedule_now"]] == float(fits(cl, elig, ref, int(row), free))
        assert nat[i, INDEX["num_ways_to_schedule"]] == max(count - int(ref.k[row]) + 1, 0)


@given(random_views())
def test_permutation_equivariant(view: QueueView) -> None:
    """Reordering the queue reorders the rows and changes nothing else (the actor scores per job)."""
    perm = np.random.default_rng(len(view.idx)).permutation(len(view.idx))
    a = features.raw_features(view)
    b = features.raw_features(QueueView(view.table, view.idx[perm], view.now, view.cluster))
    assert np.array_equal(a[perm], b)


def test_empty_queue_and_missing_cluster() -> None:
    from feature_helpers import view_of

    from rltune_daemon.domain.cluster import NodeSpec

    v = view_of([NodeSpec("n0", "a", 8, 8, 8000)], [], [])
    fs = features.build(v)
    assert fs.raw.shape == (0, 18) and fs.actor.shape == (0, 9) and fs.critic.shape == (0, 5)
    try:
        features.raw_features(QueueView(v.table, v.idx, v.now, None))
    except ValueError as err:
        assert "cluster" in str(err)
    else:
        raise AssertionError("a view without a cluster must be refused")
