"""Residual models (``--reach``): the base policy's order corrected by fewer than ``reach`` places.

What an admin relies on: a job never moves ``reach`` or more places from where the base policy put it;
an untrained residual model *is* the base policy (same order, same simulated schedule); what rollouts
record is what PPO recomputes; and a broken residual manifest is a one-line refusal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from train_helpers import one_torch_thread, random_view, tiny_args

from rltune_daemon import features
from rltune_daemon.errors import UserError
from rltune_daemon.policies import make_policy
from rltune_daemon.policies.learned import LearnedPolicy, load_learned
from rltune_daemon.policies.residual import base_ranks, keys_to_scores, reorder_keys
from rltune_daemon.train.network import Actor, Critic, plackett_luce_logp
from rltune_daemon.train.ppo import _pad, logits, train
from rltune_daemon.train.sampling import SamplingPolicy


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 60), reach=st.integers(1, 12), seed=st.integers(0, 2**31 - 1),
       scale=st.sampled_from([0.1, 3.0, 100.0]))
def test_no_job_moves_reach_places(n: int, reach: int, seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    ranks = rng.permutation(n).astype(np.int64)
    place = keys_to_scores(reorder_keys(rng.normal(0, scale, n), ranks, reach), ranks)
    assert sorted(place.tolist()) == list(range(n))  # a permutation: no job lost, no ties left
    assert np.abs(place - ranks).max() <= reach - 1


def test_zero_correction_is_the_base_order() -> None:
    view = random_view(40, seed=4)
    sjf = make_policy("sjf").scores(view)
    ranks = base_ranks(sjf, view)
    place = keys_to_scores(reorder_keys(np.zeros(40), ranks, 8.0), ranks)
    np.testing.assert_array_equal(place, ranks)
    # ties in SJF's score go to the older job, as the planner orders them
    order = np.argsort(place)
    req = view.requested[order]
    sub = view.table.submit[view.idx][order]
    assert (np.diff(req) >= 0).all()
    same = np.diff(req) == 0
    assert (np.diff(sub)[same] >= 0).all()


def _zero_actor() -> Actor:
    actor = Actor(features.ACTOR_DIM)
    last = actor.net[-1]
    assert isinstance(last, torch.nn.Linear)
    torch.nn.init.zeros_(last.weight)
    torch.nn.init.zeros_(last.bias)
    return actor


def _residual_model(tmp_path: Path, actor: Actor, reach: float = 8.0, base: str = "sjf") -> Path:
    from rltune_daemon.policies.learned import MANIFEST_FILE, MODEL_FILE

    tmp_path.mkdir(parents=True, exist_ok=True)
    torch.jit.save(torch.jit.script(actor.eval()), str(tmp_path / MODEL_FILE))
    manifest = {"features": "sampled", "schema_hash": features.SCHEMA_HASH, "input_dim": features.ACTOR_DIM,
                "base_policy": base, "reach": reach}
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(manifest))
    return tmp_path


def test_untrained_residual_model_schedules_exactly_like_its_base(tmp_path: Path) -> None:
    from rltune_daemon.evaluate.runner import EvalConfig, evaluate

    model = _residual_model(tmp_path / "m", _zero_actor())
    loaded = load_learned(model)
    assert loaded.base is not None and loaded.base.name == "sjf" and loaded.reach == 8.0
    view = random_view(300, seed=5)  # more than one age chunk: a residual model does not chunk
    np.testing.assert_array_equal(loaded.scores(view), base_ranks(make_policy("sjf").scores(view), view))
    cfg = EvalConfig(trace="testbed", policies=("daemon:sjf", f"rltune:{model}"), windows=2, window_size=256,
                     seed=1, split="train")
    res = evaluate(cfg, progress=False)["policies"]
    a, b = res["daemon:sjf"], res[f"rltune:{model}"]
    assert a["wait_mean"] > 0  # the windows queue, so the order matters
    for key in ("bsld", "wait_mean", "wait_max", "jct_mean"):
        assert a[key] == b[key], key


def test_trained_correction_moves_jobs_but_within_reach(tmp_path: Path) -> None:
    torch.manual_seed(0)
    actor = Actor(features.ACTOR_DIM)
    with torch.no_grad():
        actor.net[-1].weight.mul_(5.0)  # type: ignore[operator]
    loaded = load_learned(_residual_model(tmp_path / "m", actor, reach=4.0))
    view = random_view(120, seed=6)
    ranks = base_ranks(make_policy("sjf").scores(view), view)
    place = loaded.scores(view)
    assert (place != ranks).sum() > 5
    assert np.abs(place - ranks).max() <= 3


def test_residual_model_feeds_its_base_the_run_history(tmp_path: Path) -> None:
    """A residual model over QSSF learns runs for its base (the daemon then reads sacct for it)."""
    from rltune_daemon.domain.history import FinishedRuns

    loaded = load_learned(_residual_model(tmp_path / "m", _zero_actor(), base="qssf"))
    assert loaded.learns_history and loaded.runs_learned == 0
    n = 10
    loaded.learn_runs(FinishedRuns(tuple(f"j{k}" for k in range(n)), ("u1",) * n, np.ones(n, dtype=np.int64),
                                   np.full(n, 600.0), np.arange(n, dtype=np.float64)))
    assert loaded.runs_learned == n


def test_recorded_residual_steps_match_the_torch_logits(tmp_path: Path) -> None:
    torch.manual_seed(1)
    actor, critic = Actor(features.ACTOR_DIM), Critic(features.CRITIC_DIM)
    args = tiny_args(tmp_path, reach=6.0, reach_beta=2.0)
    policy = SamplingPolicy(actor, critic, "sampled", np.random.default_rng(0), top_m=5,
                            base=make_policy("sjf"), reach=6.0, beta=2.0)
    view = random_view(300, seed=8)
    s = policy.scores(view)
    (step,) = policy.steps
    assert len(step.actor_x) == 256 and step.offset is not None  # the base policy's first 256 jobs
    x, _, mask, picks, off = _pad([step], 5)
    with torch.no_grad():
        logp = plackett_luce_logp(logits(actor, x, off, args), mask, picks).item()
    assert step.logp == pytest.approx(logp, abs=1e-4)
    # the picks run first, in order; every other job keeps its residual place behind them
    cand = np.flatnonzero(base_ranks(make_policy("sjf").scores(view), view) < 256)
    np.testing.assert_array_equal(np.argsort(s, kind="stable")[:5], cand[step.picks])


def test_deterministic_residual_sampling_is_the_learned_policy(tmp_path: Path) -> None:
    torch.manual_seed(2)
    actor, critic = Actor(features.ACTOR_DIM), Critic(features.CRITIC_DIM)
    deployed = LearnedPolicy(torch.jit.script(actor.eval()), {"features": "sampled"}, base=make_policy("sjf"),
                             reach=8.0)
    det = SamplingPolicy(actor, critic, "sampled", np.random.default_rng(0), deterministic=True,
                         base=make_policy("sjf"), reach=8.0, beta=2.0)
    for n, seed in ((1, 0), (25, 1), (300, 2)):
        view = random_view(n, seed)
        np.testing.assert_array_equal(det.scores(view), deployed.scores(view))


def test_residual_training_keeps_the_base_order_when_nothing_helped(tmp_path: Path) -> None:
    """Iteration 0 (the base order) is a validation candidate: the manifest records its reward, and a
    run whose updates never beat it exports the zero correction."""
    manifest = train(tiny_args(tmp_path / "r", reach=8.0, max_iterations=2, validate_every=1))
    assert manifest["reach"] == 8.0
    assert manifest["best_iteration"] is not None and manifest["validation_reward"] is not None
    assert manifest["validation_reward"] >= manifest["validation_reward_start"]  # never behind the base order
    assert (tmp_path / "r" / "training_curve.png").is_file()
    loaded = load_learned(tmp_path / "r")
    x = torch.randn(32, features.ACTOR_DIM, generator=torch.Generator().manual_seed(0))
    out = loaded.actor(x)
    if manifest["best_iteration"] == 0:
        assert bool((out == 0).all())
    else:
        assert not bool((out == 0).all())


@pytest.mark.parametrize(("reach", "needle"), [("-1", "reach -1"), ("\"x\"", "reach 'x'")])
def test_bad_reach_in_a_manifest_is_one_line(tmp_path: Path, reach: str, needle: str) -> None:
    model = _residual_model(tmp_path / "m", _zero_actor())
    mf = model / "manifest.json"
    mf.write_text(mf.read_text().replace('"reach": 8.0', f'"reach": {reach}'))
    with pytest.raises(UserError) as info:
        load_learned(model)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_residual_model_with_an_unknown_base_is_one_line(tmp_path: Path) -> None:
    model = _residual_model(tmp_path / "m", _zero_actor(), base="lifo")
    with pytest.raises(UserError) as info:
        load_learned(model)
    assert "needs its base policy" in str(info.value) and "lifo" in str(info.value)


def test_reach_with_a_warm_start_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="drop --warm-start"):
        train(tiny_args(tmp_path / "w", reach=8.0, warm_start_episodes=2))
    assert not (tmp_path / "w").exists()


def test_daemon_says_what_a_residual_model_does(tmp_path: Path) -> None:
    from rltune_daemon.service.policy import choose_policy

    model = _residual_model(tmp_path / "m", _zero_actor(), reach=6.0)
    choice = choose_policy(str(model), "fcfs")
    assert not choice.fallback
    assert "reorders sjf by fewer than 6 places per job" in choice.described
