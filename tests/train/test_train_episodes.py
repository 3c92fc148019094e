"""Contended episodes: training and validation draw only windows that queue under the base policy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from train_helpers import one_torch_thread, tiny_args

from rltune_daemon.errors import UserError
from rltune_daemon.train import harness
from rltune_daemon.train.args import sim_config
from rltune_daemon.train.harness import contended_starts
from rltune_daemon.train.run import train


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


def test_keeps_the_most_contended_share_deterministically() -> None:
    cand = np.array([50, 10, 40, 20, 30], dtype=np.int64)
    assert contended_starts(cand, [1.0, 9.0, 3.0, 9.0, 2.0], 0.4).tolist() == [10, 20]
    assert contended_starts(cand, [1.0, 9.0, 3.0, 9.0, 2.0], 0.6).tolist() == [10, 20, 40]
    # ties keep the lower start
    assert contended_starts(cand, [5.0] * 5, 0.4).tolist() == [10, 20]
    assert contended_starts(cand, [5.0] * 5, 1.0).tolist() == [10, 20, 30, 40, 50]
    with pytest.raises(UserError, match="contended_share 0"):
        contended_starts(cand, [1.0] * 5, 0.0)


def test_training_and_validation_use_only_contended_windows(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    screened: list[int] = []
    played: list[int] = []

    def screen(starts: list[int]) -> list[float]:
        screened.extend(starts)
        return [float(s) for s in starts]  # later windows "queue more": the kept half is the latest

    real = harness.run_episode

    def episode(actor: Any, critic: Any, start: int, seed: int, deterministic: bool) -> dict[str, Any]:
        played.append(start)
        return real(actor, critic, start, seed, deterministic)

    monkeypatch.setattr(harness, "screen_windows", screen)
    monkeypatch.setattr(harness, "run_episode", episode)
    manifest = train(tiny_args(tmp_path / "m", episodes="contended", screen_episodes=8,
                               warm_start_episodes=2, episodes_per_iter=3, max_iterations=2))
    assert len(screened) == 8
    kept = set(sorted(screened)[4:])
    assert played and set(played) <= kept
    assert manifest["hyperparameters"]["episodes"] == "contended"


def test_unknown_episode_choice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="episodes 'busy'"):
        train(tiny_args(tmp_path / "m", episodes="busy"))
    with pytest.raises(UserError, match="screen_episodes must be at least 2"):
        train(tiny_args(tmp_path / "m", episodes="contended", screen_episodes=1))


def test_rollouts_use_the_backfill_they_are_told(tmp_path: Path) -> None:
    """``--bf-reservations`` reaches the base runs the reward compares against (and the rollouts, which
    share ``sim_config``), is recorded in the manifest, and a bad value is refused before any work."""
    from rltune_daemon.policies import make_policy
    from rltune_daemon.sim import SimConfig, simulate

    base = {}
    for r in (1, 8):
        args = tiny_args(tmp_path / f"r{r}", episode_jobs=512, bf_reservations=r)
        assert sim_config(args) == SimConfig(bf_reservations=r)
        harness.init_worker(args)
        base[r] = harness.base_metrics(300)["bsld"]
        direct = simulate(harness.worker_episodes().workload(300), make_policy("sjf"),
                          SimConfig(bf_reservations=r))
        assert base[r] == pytest.approx(direct.metrics["bsld"])
    assert base[1] != pytest.approx(base[8])
    manifest = train(tiny_args(tmp_path / "m", bf_reservations=8))
    assert manifest["bf_reservations"] == 8
    with pytest.raises(UserError, match="--bf-reservations 0"):
        train(tiny_args(tmp_path / "bad", bf_reservations=0))
