"""Actor, critic and Plackett-Luce: hand-computed values, the numpy rollout copies against torch, and
the symmetries the architecture promises (job order and padding do not matter)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from train_helpers import one_torch_thread

from rltune_daemon.features import ACTOR_DIM, CRITIC_DIM
from rltune_daemon.train.fastnet import FastActor, FastCritic, plackett_luce_logp_np
from rltune_daemon.train.network import Actor, Critic, first_pick_entropy, plackett_luce_logp


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


def _t(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


# ----------------------------------------------------------------------------- Plackett-Luce
def test_plackett_luce_by_hand() -> None:
    # exp(scores) = [1, 2, 3]: P(2 first) = 3/6, then P(1 | 2 gone) = 2/3 -> 1/3
    scores = _t([[0.0, math.log(2), math.log(3)]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    logp = plackett_luce_logp(scores, mask, torch.tensor([[2, 1]]))
    assert logp.item() == pytest.approx(math.log(1 / 3), abs=1e-12)
    # the full ranking: the last pick has probability 1
    full = plackett_luce_logp(scores, mask, torch.tensor([[2, 1, 0]]))
    assert full.item() == pytest.approx(math.log(1 / 3), abs=1e-12)
    # another order: 0 first (1/6), then 2 (3/5)
    other = plackett_luce_logp(scores, mask, torch.tensor([[0, 2]]))
    assert other.item() == pytest.approx(math.log(1 / 6 * 3 / 5), abs=1e-12)


def test_plackett_luce_ignores_masked_jobs_and_padding_picks() -> None:
    scores = _t([[0.0, math.log(2), math.log(3)], [0.0, math.log(2), math.log(3)]])
    # job 0 masked out: P(2) = 3/5, then P(1) = 1; a huge score on a masked job changes nothing
    mask = torch.tensor([[False, True, True], [True, True, True]])
    masked = plackett_luce_logp(scores, mask, torch.tensor([[2, 1], [2, -1]]))
    assert masked[0].item() == pytest.approx(math.log(3 / 5), abs=1e-12)
    # -1 = no pick at that rank: only P(2 first) = 1/2 counts
    assert masked[1].item() == pytest.approx(math.log(1 / 2), abs=1e-12)
    louder = scores.clone()
    louder[0, 0] = 50.0
    assert plackett_luce_logp(louder, mask, torch.tensor([[2, 1], [2, -1]]))[0].item() == pytest.approx(
        math.log(3 / 5), abs=1e-12)
    # all padding: log 1 = 0
    assert plackett_luce_logp(scores, mask, torch.full((2, 3), -1)).tolist() == [0.0, 0.0]


def test_plackett_luce_rows_are_independent_and_differentiable() -> None:
    g = torch.Generator().manual_seed(1)
    scores = torch.randn(4, 6, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[2, 4:] = False
    picks = torch.tensor([[5, 0, 1], [3, -1, -1], [1, 2, 0], [0, 1, 2]])
    logp = plackett_luce_logp(scores, mask, picks)
    for i in range(4):
        alone = plackett_luce_logp(scores[i : i + 1], mask[i : i + 1], picks[i : i + 1])
        assert alone.item() == pytest.approx(logp[i].item(), abs=1e-12)
    logp.sum().backward()  # type: ignore[no-untyped-call]
    assert scores.grad is not None and bool(torch.isfinite(scores.grad).all())
    assert bool((scores.grad[2, 4:] == 0).all())  # masked jobs get no gradient


def test_plackett_luce_numpy_agrees_with_torch() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 40))
        m = int(rng.integers(1, n + 1))
        s = rng.normal(0, 3, n)
        picks = rng.permutation(n)[:m].astype(np.int64)
        want = plackett_luce_logp(torch.from_numpy(s[None]), torch.ones(1, n, dtype=torch.bool),
                                  torch.from_numpy(picks[None])).item()
        assert plackett_luce_logp_np(s, picks) == pytest.approx(want, abs=1e-9)
    # large scores do not overflow (log-sum-exp with the max subtracted)
    big = np.array([1000.0, 999.0, -1000.0])
    assert plackett_luce_logp_np(big, np.array([0], dtype=np.int64)) == pytest.approx(
        -math.log1p(math.exp(-1.0)), abs=1e-9)


def test_first_pick_entropy_by_hand() -> None:
    scores = _t([[0.0, 0.0, 0.0, 7.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    ent = first_pick_entropy(scores, mask)
    assert ent.tolist() == pytest.approx([math.log(3), math.log(4)], abs=1e-12)
    one = first_pick_entropy(_t([[1.0, 5.0]]), torch.tensor([[False, True]]))
    assert one.item() == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------- numpy copies
def test_fast_actor_matches_torch_actor() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    for hidden in (64, 16):
        actor = Actor(ACTOR_DIM, hidden)
        fast = FastActor(actor)
        for n in (1, 7, 300):
            x = rng.normal(0, 2, (n, ACTOR_DIM)).astype(np.float32)
            with torch.no_grad():
                want = actor(torch.from_numpy(x)).numpy()
            got = fast(x)
            assert got.shape == (n,)
            np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
        # batched input [batch, jobs, features] too
        xb = rng.normal(0, 2, (3, 5, ACTOR_DIM)).astype(np.float32)
        with torch.no_grad():
            np.testing.assert_allclose(fast(xb), actor(torch.from_numpy(xb)).numpy(), atol=1e-5, rtol=0)


def test_fast_critic_matches_torch_critic() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    critic = Critic(CRITIC_DIM)
    fast = FastCritic(critic)
    for n in (1, 2, 9, 256):
        x = rng.normal(0, 2, (n, CRITIC_DIM)).astype(np.float32)
        # torch pads a batch: put the real jobs in a longer, masked row
        padded = np.zeros((1, n + 3, CRITIC_DIM), dtype=np.float32)
        padded[0, :n] = x
        padded[0, n:] = 9.0
        mask = torch.zeros(1, n + 3, dtype=torch.bool)
        mask[0, :n] = True
        with torch.no_grad():
            want = critic(torch.from_numpy(padded), mask).item()
        assert fast(x) == pytest.approx(want, abs=1e-5)


# ----------------------------------------------------------------------------- symmetries
def test_actor_is_permutation_equivariant() -> None:
    torch.manual_seed(3)
    actor = Actor(ACTOR_DIM)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 20, ACTOR_DIM, generator=g)
    perm = torch.randperm(20, generator=g)
    with torch.no_grad():
        s = actor(x)
        sp = actor(x[:, perm])
    torch.testing.assert_close(sp, s[:, perm], atol=1e-6, rtol=0)
    # and so is the ranking distribution: a relabelled ranking has the same probability
    mask = torch.ones(2, 20, dtype=torch.bool)
    picks = torch.tensor([[4, 0, 19], [7, 3, -1]])
    inv = torch.argsort(perm)  # job j of x sits at inv[j] in x[:, perm]
    lp = plackett_luce_logp(s, mask, picks)
    lpp = plackett_luce_logp(sp, mask, torch.where(picks >= 0, inv[picks.clamp(min=0)], picks))
    torch.testing.assert_close(lpp, lp, atol=1e-5, rtol=0)


def test_padding_does_not_change_real_jobs() -> None:
    torch.manual_seed(4)
    actor, critic = Actor(ACTOR_DIM), Critic(CRITIC_DIM)
    g = torch.Generator().manual_seed(4)
    xa = torch.randn(1, 6, ACTOR_DIM, generator=g)
    xc = torch.randn(1, 6, CRITIC_DIM, generator=g)
    mask = torch.tensor([[True, True, True, True, False, False]])
    picks = torch.tensor([[1, 3, -1]])
    with torch.no_grad():
        s = actor(xa)
        v = critic(xc, mask)
        lp = plackett_luce_logp(s, mask, picks)
        for junk in (0.0, 1e3, -1e3):
            xa2, xc2 = xa.clone(), xc.clone()
            xa2[0, 4:] = junk
            xc2[0, 4:] = junk
            s2 = actor(xa2)
            torch.testing.assert_close(s2[0, :4], s[0, :4], atol=0, rtol=0)
            torch.testing.assert_close(critic(xc2, mask), v, atol=1e-6, rtol=0)
            torch.testing.assert_close(plackett_luce_logp(s2, mask, picks), lp, atol=1e-6, rtol=0)
        # the unpadded row gives the same value and log-probability
        torch.testing.assert_close(critic(xc[:, :4], mask[:, :4]), v, atol=1e-6, rtol=0)
        torch.testing.assert_close(plackett_luce_logp(s[:, :4], mask[:, :4], picks), lp, atol=1e-6, rtol=0)


def test_critic_ignores_job_order() -> None:
    torch.manual_seed(5)
    critic = Critic(CRITIC_DIM)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 12, CRITIC_DIM, generator=g)
    mask = torch.ones(3, 12, dtype=torch.bool)
    with torch.no_grad():
        torch.testing.assert_close(critic(x[:, torch.randperm(12, generator=g)], mask), critic(x, mask),
                                   atol=1e-6, rtol=0)
        # an all-padding row is finite (an empty queue has a value)
        assert bool(torch.isfinite(critic(x, torch.zeros(3, 12, dtype=torch.bool))).all())
