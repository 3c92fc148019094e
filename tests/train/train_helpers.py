"""Builders for the learning-package tests: seeded queues on the testbed cluster, tiny training
arguments, model export without training, and SJF decisions recorded for imitation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rltune_daemon.domain.arrays import ClusterArrays, JobTable
from rltune_daemon.domain.jobs import Job
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.train.args import TrainArgs
from rltune_daemon.train.network import Actor

NOW = 100_000.0
Samples = list[tuple[np.ndarray[Any, np.dtype[np.float32]], np.ndarray[Any, np.dtype[np.int64]]]]


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Tiny tensors on two busy cores: one intra-op thread is ~50x faster than two fighting threads."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def random_view(n: int, seed: int = 0) -> QueueView:
    """``n`` pending jobs of mixed shapes on the idle testbed cluster (13 GPUs, three types)."""
    from rltune_daemon.traces.testbed import cluster

    rng = np.random.default_rng(seed)
    spec = cluster()
    jobs = [
        Job(f"j{k}", NOW - float(rng.uniform(0, 50_000)), int(rng.choice([1, 1, 2, 4, 8])),
            float(rng.uniform(60, 20_000)), gpu_types=(("p100",), (), ("k80",), ())[int(rng.integers(4))],
            user=f"u{int(rng.integers(3))}")
        for k in range(n)
    ]
    return QueueView(JobTable.from_jobs(jobs, spec), np.arange(n, dtype=np.int64), NOW,
                     ClusterArrays.from_spec(spec))


def tiny_args(out: Path, **kw: Any) -> TrainArgs:
    """A training run of a few seconds on the testbed trace (1,024 jobs by default)."""
    base: dict[str, Any] = {
        "trace": "testbed", "out": out, "episode_jobs": 96, "episodes_per_iter": 2, "workers": 1,
        "max_iterations": 1, "validation_episodes": 2, "heldout_windows": 0, "heldout_window_size": 64,
        "progress": False,
    }
    return TrainArgs(**{**base, **kw})


def refusal(out: Path, **kw: Any) -> str:
    """The one-line ``UserError`` a tiny run into ``out`` is refused with; nothing may be written."""
    import pytest

    from rltune_daemon.errors import UserError
    from rltune_daemon.train.run import train

    with pytest.raises(UserError) as info:
        train(tiny_args(out, **kw))
    assert "\n" not in str(info.value)
    assert not out.exists()
    return str(info.value)


def train_twice(root: Path, **kw: Any) -> tuple[Path, Path, dict[str, Any]]:
    """Two identical seeded tiny runs into ``root/a`` and ``root/b`` (for determinism tests); the first
    run's manifest."""
    from rltune_daemon.train.run import train

    with one_torch_thread():
        first = train(tiny_args(root / "a", **kw))
        train(tiny_args(root / "b", **kw))
    return root / "a", root / "b", first


def export_untrained(actor: Actor, out: Path, features: str = "sampled") -> dict[str, Any]:
    """Write ``actor`` as a model directory exactly as training does (no held-out evaluation)."""
    from rltune_daemon.train.export import export_model

    out.mkdir(parents=True, exist_ok=True)
    return export_model(actor, tiny_args(out, features=features), 0.0, [], {})


def record_base(starts: list[int], episode_jobs: int = 128, base: str = "sjf", top_m: int = 16,
                opts: dict[str, str] | None = None) -> Samples:
    """Decisions of ``base`` on training episodes of the testbed trace, as the warm start records them."""
    from rltune_daemon.policies import make_policy
    from rltune_daemon.sim import Simulator
    from rltune_daemon.sim.daemon import planner_controller
    from rltune_daemon.traces import load_workload, split_by_time
    from rltune_daemon.train.episodes import episode_workload
    from rltune_daemon.train.imitation import ImitationRecorder

    train, _ = split_by_time(load_workload("testbed", estimates="user", seed=0, **(opts or {})))
    samples: Samples = []
    for start in starts:
        rec = ImitationRecorder(make_policy(base), "sampled", top_m)
        ctl = planner_controller(rec, "daemon", placement=False)
        Simulator(episode_workload(train, start, episode_jobs), ctl).run()
        samples.extend(rec.samples)
    return samples


def top_pick_agreement(score: Callable[[torch.Tensor], torch.Tensor], samples: Samples) -> float:
    """Share of decisions where the highest-scored job is the base policy's first pick."""
    with torch.no_grad():
        hits = [int(np.argmax(score(torch.from_numpy(x)).numpy())) == int(p[0]) for x, p in samples]
    return float(np.mean(hits))
