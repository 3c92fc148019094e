"""What every trainer shares (PPO in ``train.ppo``, the cross-entropy search in ``train.cem``): the
episodes, the rollout workers, validation, the warm start and export, gathered in the ``Session``.

An *episode* is a batch of ``episode_jobs`` consecutive jobs (paper: 256) drawn from the training
split (the first 90 % of the trace), simulated from an idle cluster twice: once under the base policy
and once under the actor, in the mode the model will be deployed in (``daemon``: plans every 60 s,
applied as SiteFactors on top of multifactor; ``event``: ranks at every scheduling pass). The reward,
given at the end of the episode as in the paper, is the normalised gap to the base policy:
``(base - rl) / base`` for the chosen metric(s) (``train.reward``), so it measures improvement, not how
easy the batch was. Rollouts run in parallel over processes, each holding the training split; a
trainer's updates run in the main process.

Placement during training is Slurm's default (greedy): the actor learns the order; the MILP is added at
evaluation and in the daemon, as in the paper where the solver acts on the actor's top-K.
"""

from __future__ import annotations

import csv
import io
import math
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tqdm import tqdm

from rltune_daemon import features
from rltune_daemon.errors import UserError
from rltune_daemon.features.naive import NAIVE_DIM
from rltune_daemon.planner.config import INTERVAL_DEFAULT
from rltune_daemon.policies.slurm_priority import site_multifactor
from rltune_daemon.sim import Simulator, simulate
from rltune_daemon.sim.daemon import planner_controller
from rltune_daemon.traces import load_workload, split_by_time
from rltune_daemon.train.args import TrainArgs, base_policy, check_args, rollout_planner, sim_config
from rltune_daemon.train.episodes import Episodes
from rltune_daemon.train.export import export_model, plot_curve
from rltune_daemon.train.imitation import ImitationRecorder, fit_imitation
from rltune_daemon.train.init_model import load_initial_actor
from rltune_daemon.train.network import Actor, Critic
from rltune_daemon.train.reward import reward, scored
from rltune_daemon.train.sampling import SamplingPolicy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rltune_daemon.policies.base import Policy
    from rltune_daemon.sim.controller import Controller


# ----------------------------------------------------------------------------- episodes (workers)
_W: dict[str, Any] = {}
METRICS = ("bsld", "wait_mean")


def init_worker(args: TrainArgs) -> None:
    """Each rollout process's state; also run in the main process, so the warm start and the updates
    use one intra-op thread too: a thread count changes the order of float reductions, and the same seed
    must give the same model on a laptop and on a 64-core node (tests/train/test_train_reproduce.py)."""
    torch.set_num_threads(1)
    part = split_by_time(load_workload(args.trace, estimates=args.estimates, seed=args.seed,
                                       cluster=args.cluster, **args.opts))[0]
    episodes = Episodes(args.trace, part, args.episode_jobs)
    _W.update(args=args, episodes=episodes, base_cache={})


def worker_episodes() -> Episodes:
    """This process's training windows (``init_worker``)."""
    episodes: Episodes = _W["episodes"]
    return episodes


def rollout_controller(policy: Policy, args: TrainArgs) -> Controller:
    """How every rollout and warm-start episode runs ``policy`` (``args.mode``, ``args.react``); the
    manifest records its settings (``args.rollout_settings``)."""
    return planner_controller(policy, args.mode, placement=False, config=rollout_planner(args),
                              interval=INTERVAL_DEFAULT, react=args.react,
                              base=site_multifactor(args.slurm_config))


def base_metrics(start: int) -> dict[str, Any]:
    """The base policy's metrics on the episode window at ``start``: deterministic, so simulated once
    per process."""
    cache: dict[int, dict[str, Any]] = _W["base_cache"]
    if start not in cache:
        args: TrainArgs = _W["args"]
        eps: Episodes = _W["episodes"]
        window = eps.workload(start)
        cache[start] = scored(simulate(window, eps.prime(base_policy(args), start), sim_config(args)),
                              window)
    return cache[start]


def screen_windows(starts: list[int]) -> list[float]:
    """The base policy's BSLD on each candidate window: how much it queues (``contended_starts``)."""
    return [float(base_metrics(s)["bsld"]) for s in starts]


def contended_starts(candidates: np.ndarray[Any, np.dtype[np.int64]], base_bsld: Sequence[float],
                     share: float) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The ``share`` of candidate episode starts whose windows queue most under the base policy.

    Order only matters where jobs queue. A trace's quiet stretches give episodes where every order
    scores alike, so their rewards are noise; and the regime a scheduler is judged in (and the
    evaluation's held-out tail, which training never sees) is the contended one. Ties keep the
    lower start, so the choice is deterministic."""
    if not 0.0 < share <= 1.0:
        raise UserError(f"contended_share {share:g}: expected a fraction in (0, 1]")
    keep = max(1, round(len(candidates) * share))
    order = np.lexsort((candidates, -np.asarray(base_bsld, dtype=np.float64)))
    return np.sort(candidates[order[:keep]])


def run_episode(actor: Actor, critic: Critic, start: int, seed: int, deterministic: bool) -> dict[str, Any]:
    """The window at ``start`` under ``actor`` (sampled from ``seed``, or its best order when
    ``deterministic``): the decisions taken, the reward, and both policies' metrics."""
    args: TrainArgs = _W["args"]
    base = base_metrics(start)
    if not deterministic and float(base["wait_mean"]) <= 0.0:
        # No job ever waited under the base policy: no ordering can do better, nothing to learn.
        return {"steps": [], "reward": 0.0, "start": start, "skipped": True,
                "rl": {k: base[k] for k in METRICS}, "base": {k: base[k] for k in METRICS}}
    rng = np.random.default_rng(seed)
    policy = SamplingPolicy(actor, critic, args.features, rng, args.top_m, deterministic,
                            _W["episodes"].history(start) if args.features == "sampled" else None)
    ctl = rollout_controller(policy, args)
    wl = _W["episodes"].workload(start)
    res = Simulator(wl, ctl, sim_config(args)).run()
    steps = policy.steps
    episode_reward = reward(base, scored(res, wl))
    if len(steps) > args.max_steps_per_episode:  # every step shares the episode's reward: a sample will do
        keep = np.sort(rng.choice(len(steps), args.max_steps_per_episode, replace=False))
        steps = [steps[i] for i in keep]
    return {"steps": steps, "reward": episode_reward, "start": start,
            "skipped": False, "rl": {k: res.metrics[k] for k in METRICS},
            "base": {k: base[k] for k in METRICS}}


def state_copy(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A detached copy of ``module``'s weights: shipped to rollout workers, kept as the best so far."""
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _rollouts(payload: tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], list[tuple[int, int]], bool]
              ) -> list[dict[str, Any]]:
    actor_state, critic_state, jobs, deterministic = payload
    args: TrainArgs = _W["args"]
    actor, critic = networks(args)
    actor.load_state_dict(actor_state)
    critic.load_state_dict(critic_state)
    return [run_episode(actor, critic, start, seed, deterministic) for start, seed in jobs]


def _input_dim(mode: str) -> int:
    return int(features.ACTOR_DIM if mode == "sampled" else NAIVE_DIM)


def networks(args: TrainArgs) -> tuple[Actor, Critic]:
    """The actor (``hidden`` 0: one linear layer) and the critic (its own width, 64 for a linear actor)."""
    dim = _input_dim(args.features)
    return Actor(dim, args.hidden), Critic(5, args.hidden or 64)


def batch_means(episodes: list[dict[str, Any]]) -> dict[str, float]:
    """A batch's mean reward, BSLD and wait (the learned order's and the base policy's): the CSV's
    columns for the training curve."""
    return {
        "reward": float(np.mean([ep["reward"] for ep in episodes])),
        "rl_bsld": float(np.mean([ep["rl"]["bsld"] for ep in episodes])),
        "base_bsld": float(np.mean([ep["base"]["bsld"] for ep in episodes])),
        "rl_wait": float(np.mean([ep["rl"]["wait_mean"] for ep in episodes])),
        "base_wait": float(np.mean([ep["base"]["wait_mean"] for ep in episodes])),
    }


# ----------------------------------------------------------------------------- a run's set-up
@dataclass(kw_only=True)
class Session:
    """What every trainer shares: the checked arguments, the networks, the rollout pool, the episode
    windows (all or contended), the fixed validation windows, the warm start, the clock, the best
    validated actor and the CSV rows. Trainers call ``consider_start``, then ``rollouts``, ``consider``
    and ``record`` per iteration, and end with ``finish``."""

    args: TrainArgs
    actor: Actor
    critic: Critic
    t_start: float
    rng: np.random.Generator
    workers: int
    pool: ProcessPoolExecutor | None
    pool_starts: np.ndarray[Any, np.dtype[np.int64]] | None
    n_starts: int
    val_jobs: list[tuple[int, int]]
    warm: dict[str, float]
    bar: Any
    best: dict[str, Any] = field(default_factory=lambda: {"val_reward": -math.inf})
    start_val: float | None = None  # --init: the validation reward of the starting model (iteration 0)
    init: dict[str, Any] | None = None  # --init: the model the run started from (manifest "init")
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t_start

    def done(self, it: int) -> bool:
        """Iteration ``it`` (the number completed) ends the run: ``max_iterations`` or the time budget."""
        args = self.args
        return it >= args.max_iterations if args.max_iterations else self.elapsed >= args.minutes * 60.0

    def draw(self, gen: np.random.Generator, k: int) -> np.ndarray[Any, np.dtype[np.int64]]:
        """``k`` training episode starts."""
        if self.pool_starts is None:
            return gen.integers(0, self.n_starts, k)
        return self.pool_starts[gen.integers(0, len(self.pool_starts), k)]

    def rollouts(self, tasks: list[tuple[dict[str, torch.Tensor], list[tuple[int, int]]]],
                 deterministic: bool) -> list[list[dict[str, Any]]]:
        """Run each task's episodes ``(start, seed)`` with its actor weights (the critic's are shared);
        results in task order, whichever process ran them."""
        critic = state_copy(self.critic)
        payloads = [(a, critic, jobs, deterministic) for a, jobs in tasks]
        if self.pool is None:
            return [_rollouts(p) for p in payloads]
        futures = [self.pool.submit(_rollouts, p) for p in payloads]
        return [f.result() for f in futures]

    def spread(self, actor: dict[str, torch.Tensor], jobs: list[tuple[int, int]],
               deterministic: bool) -> list[dict[str, Any]]:
        """One actor's episodes, split over the workers, returned in ``jobs`` order: the update's batch
        and the validation mean must not depend on how many workers ran them."""
        parts = [jobs[i :: self.workers] for i in range(self.workers)]
        done = self.rollouts([(actor, p) for p in parts if p], deterministic)
        out: list[dict[str, Any]] = [{}] * len(jobs)
        for i, part in enumerate(done):
            out[i :: self.workers] = part
        return out

    def validate(self, actor: dict[str, torch.Tensor]) -> float:
        """Mean reward of the deterministic actor on the fixed validation windows."""
        return float(np.mean([ep["reward"] for ep in self.spread(actor, self.val_jobs, deterministic=True)]))

    def consider_start(self) -> None:
        """Iteration 0 of a fine-tuning (``--init``: the model it starts from): a candidate, kept when
        nothing beat it, so a fine-tuning never exports worse than its start."""
        if self.args.init is None:
            return
        self.start_val = self.consider(0, state_copy(self.actor))
        if not self.args.progress:
            print(f"iter 0 val {self.start_val:+.3f} (the starting model)", flush=True)

    def consider(self, it: int, actor: dict[str, torch.Tensor]) -> float:
        """Validate iteration ``it``'s actor and keep it if it beats the best so far; its reward."""
        val = self.validate(actor)
        if val > self.best["val_reward"]:
            self.best = {"val_reward": val, "iteration": it, "actor": actor}
        return val

    def record(self, row: dict[str, Any]) -> None:
        """One iteration's CSV row (the file is rewritten, so a stopped run keeps its curve)."""
        self.rows.append(row)
        _write_csv(self.args.out / "training.csv", self.rows)

    def tick(self, done: int, **postfix: str) -> None:
        """After iteration ``done``: the bar counts iterations when they bound the run, else seconds."""
        limit = self.args.max_iterations
        self.bar.n = done if limit else min(int(self.elapsed), int(self.args.minutes * 60.0))
        self.bar.set_postfix(**postfix)  # refreshes the bar

    def close(self) -> None:
        self.bar.close()
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def finish(self, reward_label: str = "training reward (sampled)") -> dict[str, Any]:
        """Load the best validated actor, write the CSV and curve, export and evaluate held-out."""
        args = self.args
        if "actor" in self.best:
            self.actor.load_state_dict(self.best["actor"])
        train_minutes = self.elapsed / 60.0
        _write_csv(args.out / "training.csv", self.rows)
        backfill = "" if args.bf_reservations == 1 else f", {args.bf_reservations} reservations"
        title = f"{args.trace}: RLTune vs {args.base} ({args.mode} mode, {args.algo}{backfill})"
        plot_curve(self.rows, args.out / "training_curve.png", title, self.start_val, reward_label)
        return export_model(self.actor, args, train_minutes, self.rows, self.best, self.warm, self.start_val,
                            self.init)


def open_session(args: TrainArgs) -> Session:
    """Check the arguments, seed everything, start the pool, choose the episode and validation windows
    and run the warm start. The caller must ``close()`` the session."""
    t_start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    check_args(args)
    actor, critic = networks(args)
    init = None
    if args.init is not None:  # checked before the trace loads: a wrong model is one line, at once
        init = load_initial_actor(actor, args)
    init_worker(args)  # also validates the trace in the main process
    episodes = worker_episodes()
    n_starts = episodes.n_starts
    workers = args.workers or os.cpu_count() or 1
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "checkpoints").mkdir(exist_ok=True)
    pool = None
    if workers > 1:
        ctx = multiprocessing.get_context("spawn")  # no fork after torch started its threads
        pool = ProcessPoolExecutor(workers, ctx, initializer=init_worker, initargs=(args,))
    try:
        # episode starts: anywhere in the training split, or only its contended windows
        pool_starts: np.ndarray[Any, np.dtype[np.int64]] | None = None
        if args.episodes == "contended":
            cand = np.random.default_rng(args.seed + 104729).integers(0, n_starts, args.screen_episodes)
            parts = [p.tolist() for p in np.array_split(cand, workers)]
            scores = [x for part in (pool.map(screen_windows, parts) if pool is not None
                                     else map(screen_windows, parts))
                      for x in part]
            pool_starts = contended_starts(cand, scores, args.contended_share)
        session = Session(args=args, actor=actor, critic=critic, t_start=t_start, rng=rng, workers=workers,
                          pool=pool, pool_starts=pool_starts, n_starts=n_starts, val_jobs=[], warm={},
                          bar=None, init=init)
        if args.warm_start_episodes > 0:
            session.warm = warm_start(actor, args, episodes, session.draw(rng, args.warm_start_episodes))
        val_rng = np.random.default_rng(args.seed + 7919)
        session.val_jobs = [(int(s), 0) for s in session.draw(val_rng, args.validation_episodes)]
    except BaseException:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        raise
    limit = args.max_iterations
    session.bar = tqdm(total=limit or int(args.minutes * 60.0), unit="it" if limit else "s",
                       desc=f"train {args.trace}", disable=not args.progress)
    return session


def warm_start(actor: Actor, args: TrainArgs, episodes: Episodes,
               starts: np.ndarray[Any, np.dtype[np.int64]]) -> dict[str, float]:
    """Behaviour-clone the base policy's ranking (see ``imitation``); returns what was done."""
    t0 = time.perf_counter()
    samples = []
    for start in starts:
        history = episodes.history(int(start)) if args.features == "sampled" else None
        rec = ImitationRecorder(episodes.prime(base_policy(args), int(start)), args.features,
                                args.top_m, history)
        ctl = rollout_controller(rec, args)
        Simulator(episodes.workload(int(start)), ctl, sim_config(args)).run()
        samples.extend(rec.samples)
    nll = fit_imitation(actor, samples, args.top_m, seed=args.seed)
    return {"episodes": args.warm_start_episodes, "decisions": len(samples), "nll_per_pick": nll,
            "seconds": time.perf_counter() - t0}


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue())
