"""``hist_time``, the run-history input (feature 18, actor slot 9): values, the history an episode may
know, and models trained before it (8 inputs) scoring exactly as before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from rltune_daemon import features
from rltune_daemon.domain.arrays import ClusterArrays, JobTable
from rltune_daemon.domain.history import RunHistory
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.features.schema import INDEX, new_history
from rltune_daemon.policies.learned import LearnedPolicy
from rltune_daemon.traces import load_workload, split_by_time
from rltune_daemon.train.history import EpisodeHistory
from rltune_daemon.train.network import Actor


def _view(n: int = 40) -> QueueView:
    w = load_workload("testbed")
    table = JobTable.from_jobs(w.jobs[:n], w.cluster)
    return QueueView(table, np.arange(n, dtype=np.int64), float(table.submit[-1]),
                     ClusterArrays.from_spec(w.cluster))


def test_without_history_hist_time_is_the_requested_time() -> None:
    fs = features.build(_view())
    assert np.array_equal(fs.raw[:, INDEX["hist_time"]], fs.raw[:, INDEX["req_time"]])
    assert np.array_equal(fs.actor[:, -1], fs.raw[:, INDEX["hist_time"]])


def test_hist_time_is_the_users_mean_runtime_for_that_gpu_count() -> None:
    view = _view()
    t = view.table
    h = new_history()
    user, gpus = t.users[t.user[0]], int(t.gpus[0])
    for runtime in (100.0, 300.0):
        h.learn(user, gpus, runtime)
    natural = features.natural_features(dataclasses.replace(view, history=h))[:, INDEX["hist_time"]]
    same = (t.user == t.user[0]) & (t.gpus == gpus)
    assert np.all(natural[same] == 200.0)
    # other users fall back to the last runs of anyone: the same two runs here
    assert np.all(natural[~same & (t.user != t.user[0])] == 200.0)
    assert RunHistory().predict("nobody", 1, 42.0) == 42.0  # no history at all: the requested time


def test_an_episode_knows_only_runs_that_ended_before_it() -> None:
    train, _ = split_by_time(load_workload("testbed", estimates="user", seed=0))
    eh = EpisodeHistory(train)
    start = 300
    runs = eh.at(start)
    first = float(train.jobs[start].submit)
    assert len(runs) > 0 and np.all(runs.end <= first)
    index = {j.id: i for i, j in enumerate(train.jobs)}
    assert max(index[i] for i in runs.ids) < start
    assert len(eh.at(0)) == 0 and eh.history(start).runs == len(runs)


def test_a_model_learns_the_run_history() -> None:
    """A model reads the hist_time input: what it has seen finish changes its scores."""
    torch.manual_seed(0)
    new = LearnedPolicy(torch.jit.script(Actor(features.ACTOR_DIM).eval()),
                        {"features": "sampled", "input_dim": features.ACTOR_DIM})
    assert new.learns_history
    view = _view()
    before = new.scores(view)
    for r in range(40):
        new.observe_finish(view.table, r, 10.0 * (r + 1))
    assert new.runs_learned == 40
    assert not np.array_equal(new.scores(view), before)


@pytest.mark.parametrize("n", [0, 1, 25])
def test_predict_rows_equals_predict(n: int) -> None:
    view = _view(40)
    t = view.table
    h = new_history()
    rng = np.random.default_rng(0)
    for r in range(40):
        if rng.random() < 0.5:
            h.learn(t.users[t.user[r]], int(t.gpus[r]), float(rng.integers(60, 6000)))
    rows = np.arange(n, dtype=np.int64)
    default = t.time_limit[rows].astype(np.float64)
    want = [h.predict(t.users[t.user[r]], int(t.gpus[r]), float(default[r])) for r in rows]
    assert h.predict_rows(t, rows, default).tolist() == want
