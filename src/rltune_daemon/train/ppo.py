"""PPO for the RLTune actor, in one readable file (CleanRL's habit: typed arguments, seeding, one loop).

An *episode* is a batch of ``episode_jobs`` consecutive jobs (paper: 256) drawn from the training
split (the first 90 % of the trace), simulated from an idle cluster twice: once under the base policy
and once under the stochastic actor, in the mode the model will be deployed in (``daemon``: plans every
60 s, applied as SiteFactors on top of multifactor; ``event``: ranks at every scheduling pass). The
reward, given at the end of the episode as in the paper, is the normalised gap to the base policy:
``(base - rl) / base`` for the chosen metric(s), so it measures improvement, not how easy the batch was.
Every decision of the episode shares that return and the critic's value is the baseline (advantage =
return - value). Rollouts run in parallel over processes; updates run in the main process. What does
not depend on the algorithm (arguments, episode windows, validation, pool, export) is the ``Session``,
which the cross-entropy search (``train.cem``) shares.

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
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tqdm import tqdm

from rltune_daemon import features
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.runner import EVAL_DEFAULT_OPTS
from rltune_daemon.features.naive import NAIVE_DIM
from rltune_daemon.planner.config import (
    GUARD_REFERENCES,
    INTERVAL_DEFAULT,
    STARVATION_REFERENCE_DEFAULT,
    PlannerConfig,
    guard_reference,
    loop_settings,
)
from rltune_daemon.policies import BASELINES, make_policy
from rltune_daemon.service.simdaemon import planner_controller
from rltune_daemon.sim import Simulator, simulate
from rltune_daemon.sim.config import SimConfig, checked_reservations
from rltune_daemon.traces import load_workload, split_by_time
from rltune_daemon.train.episodes import Episodes, trace_names
from rltune_daemon.train.export import export_model, plot_curve
from rltune_daemon.train.imitation import ImitationRecorder, fit_imitation
from rltune_daemon.train.init_model import load_initial_actor
from rltune_daemon.train.network import Actor, Critic, first_pick_entropy, plackett_luce_logp
from rltune_daemon.train.reward import checked_metric, metric_keys, reward_scale
from rltune_daemon.train.sampling import SamplingPolicy, Step

if TYPE_CHECKING:
    from rltune_daemon.policies.base import Policy
    from rltune_daemon.sim.controller import Controller


@dataclass
class TrainArgs:
    trace: str
    out: Path
    base: str = "sjf"
    minutes: float = 30.0
    seed: int = 0
    mode: str = "daemon"  # daemon | event
    react: float = 0.0  # daemon mode: queue-check period (s) in rollouts; 0 = 60-s cycles only (faster)
    bf_reservations: int = 1  # blocked jobs per partition the simulator's backfill reserves for (1: EASY)
    starvation_reference: str = STARVATION_REFERENCE_DEFAULT  # daemon mode: the guard's reference (rollouts)
    features: str = "sampled"  # sampled | naive
    metric: str = "bsld+wait"  # bsld | wait | bsld+wait | both
    rivals: str = ""  # other heuristics (comma-separated) the reward is also measured against (``reward``)
    estimates: str | None = "user"
    opts: dict[str, str] = field(default_factory=dict)
    cluster: str | None = None  # a cluster file for a sacct/CSV trace (evaluate's --cluster)
    episode_jobs: int = 256
    episodes_per_iter: int = 16
    workers: int = 0  # 0 = all cores
    lr: float = 1e-3
    clip: float = 0.2
    update_epochs: int = 4
    minibatch: int = 256
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    top_m: int = 16
    max_steps_per_episode: int = 256
    hidden: int = 64  # actor width; 0 = one linear layer (a weighted sum of the inputs)
    algo: str = "ppo"  # ppo | cem (train.cem: cross-entropy search over a linear actor's weights)
    cem_population: int = 12  # cem: candidates per generation (the mean is scored besides)
    cem_episodes: int = 4  # cem: windows per generation, the same for every candidate
    cem_elite: float = 0.25  # cem: share of candidates the next mean and spread are fitted to
    cem_sigma: float = 0.5  # cem: first spread, relative to the mean weight's size
    validate_every: int = 5
    validation_episodes: int = 8
    max_iterations: int = 0  # 0 = until the time budget is spent
    heldout_windows: int = 10
    heldout_window_size: int = 1024
    warm_start_episodes: int = 0  # >0: imitate the base policy on that many episodes before PPO
    init: Path | None = None  # start from this trained model's actor (fine-tuning; train.init_model)
    episodes: str = "all"  # all | contended: train and validate only on windows that queue (see below)
    screen_episodes: int = 128  # episodes = contended: candidate windows simulated under the base policy
    contended_share: float = 0.5  # ... of which the most contended share (by base BSLD) is kept
    progress: bool = True


# ----------------------------------------------------------------------------- episodes (workers)
_W: dict[str, Any] = {}
METRICS = ("bsld", "wait_mean")


def _worker_init(args: TrainArgs) -> None:
    """Each rollout process's state; also run in the main process, so the warm start and the updates
    use one intra-op thread too: a thread count changes the order of float reductions, and the same seed
    must give the same model on a laptop and on a 64-core node (tests/train/test_train_reproduce.py)."""
    torch.set_num_threads(1)
    names = trace_names(args.trace)
    # one trace: its options as given (the CLI adds evaluation's defaults); several: each its defaults
    opts = {name: args.opts if len(names) == 1 else EVAL_DEFAULT_OPTS.get(name, {}) for name in names}
    parts = [split_by_time(load_workload(name, estimates=args.estimates, seed=args.seed,
                                         cluster=args.cluster, **opts[name]))[0] for name in names]
    _W.update(args=args, episodes=Episodes(names, parts, args.episode_jobs), policy_cache={})


def sim_config(args: TrainArgs) -> SimConfig:
    """The simulator every rollout, base run and warm start of a training uses."""
    return SimConfig(bf_reservations=args.bf_reservations)


def rollout_planner(args: TrainArgs) -> PlannerConfig:
    """Rollouts run the policy as the daemon would, with the planner's guard (its reference as given,
    the rest this version's defaults) but Slurm's own placement: the actor learns an order; the MILP is
    added at evaluation and in the daemon."""
    return PlannerConfig(placement=False, starvation_reference=guard_reference(args.starvation_reference))


def rollout_controller(policy: Policy, args: TrainArgs) -> Controller:
    """How every rollout and warm-start episode runs ``policy`` (``args.mode``, ``args.react``)."""
    return planner_controller(policy, args.mode, placement=False, config=rollout_planner(args),
                              interval=INTERVAL_DEFAULT, react=args.react)


def rollout_settings(args: TrainArgs) -> dict[str, Any]:
    """What the manifest records of ``rollout_controller``: most of the guard is this version's default,
    not an argument, so a later version with another default can tell that its re-run differs."""
    return loop_settings(rollout_planner(args), INTERVAL_DEFAULT, args.react)


def reward(base: dict[str, Any], rl: dict[str, Any], metric: str) -> float:
    """Mean over the metrics of ``(base - rl) / base`` (improvement fraction; 0 when both are 0).

    ``both`` takes the smaller gap instead: a window scores as well as its worse metric, so a search
    cannot buy wait with slowdown (or back), which the mean of the two lets it do when the target is
    lower BSLD *and* lower wait."""
    parts = [(float(base[key]) - float(rl[key])) / reward_scale(base, key) for key in metric_keys(metric)]
    return float(np.clip(min(parts) if metric == "both" else np.mean(parts), -1.0, 1.0))


def _policy_metrics(name: str, start: int) -> dict[str, Any]:
    """A heuristic's metrics on the episode window at ``start``: deterministic, so simulated once."""
    cache: dict[tuple[str, int], dict[str, Any]] = _W["policy_cache"]
    if (name, start) not in cache:
        args: TrainArgs = _W["args"]
        eps: Episodes = _W["episodes"]
        cache[name, start] = simulate(eps.workload(start), eps.prime(make_policy(name), start),
                                      sim_config(args)).metrics
    return cache[name, start]


def _base_metrics(start: int) -> dict[str, Any]:
    return _policy_metrics(_W["args"].base, start)


def rival_names(rivals: str) -> list[str]:
    return [r.strip() for r in rivals.split(",") if r.strip()]


def window_reward(base: dict[str, Any], rivals: Sequence[dict[str, Any]], rl: dict[str, Any],
                  metric: str) -> float:
    """The episode's reward: against the base policy, or with ``rivals`` the smallest of the rewards
    against the base and each rival, so a window counts as won only where every one of them is beaten.
    With ``metric = "both"`` that is lower BSLD *and* wait than each as a reward,
    where the base alone lets a search trade toward a heuristic better in the other metric (FCFS's wait
    on the testbed, against multifactor as base)."""
    return min(reward(ref, rl, metric) for ref in (base, *rivals))


def _screen(starts: list[int]) -> list[float]:
    return [float(_base_metrics(s)["bsld"]) for s in starts]


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


def _episode(actor: Actor, critic: Critic, start: int, seed: int, deterministic: bool) -> dict[str, Any]:
    args: TrainArgs = _W["args"]
    base = _base_metrics(start)
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
    rivals = [_policy_metrics(name, start) for name in rival_names(args.rivals)]
    episode_reward = window_reward(base, rivals, res.metrics, args.metric)
    if len(steps) > args.max_steps_per_episode:  # every step shares the episode's reward: a sample will do
        keep = np.sort(rng.choice(len(steps), args.max_steps_per_episode, replace=False))
        steps = [steps[i] for i in keep]
    return {"steps": steps, "reward": episode_reward, "start": start,
            "skipped": False, "rl": {k: res.metrics[k] for k in METRICS},
            "base": {k: base[k] for k in METRICS}}


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A detached copy of ``module``'s weights: shipped to rollout workers, kept as the best so far."""
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _rollouts(payload: tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], list[tuple[int, int]], bool]
              ) -> list[dict[str, Any]]:
    actor_state, critic_state, jobs, deterministic = payload
    args: TrainArgs = _W["args"]
    actor, critic = networks(args)
    actor.load_state_dict(actor_state)
    critic.load_state_dict(critic_state)
    return [_episode(actor, critic, start, seed, deterministic) for start, seed in jobs]


def _input_dim(mode: str) -> int:
    return int(features.ACTOR_DIM if mode == "sampled" else NAIVE_DIM)


# ----------------------------------------------------------------------------- PPO update
UPDATE_STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")


def _pad(steps: Sequence[Step], top_m: int) -> tuple[torch.Tensor, ...]:
    n = max(len(s.actor_x) for s in steps)
    b = len(steps)
    dim, cdim = steps[0].actor_x.shape[1], steps[0].critic_x.shape[1]
    x = np.zeros((b, n, dim), dtype=np.float32)
    c = np.zeros((b, n, cdim), dtype=np.float32)
    mask = np.zeros((b, n), dtype=np.bool_)
    picks = np.full((b, top_m), -1, dtype=np.int64)
    for i, s in enumerate(steps):
        k = len(s.actor_x)
        x[i, :k], c[i, :k], mask[i, :k] = s.actor_x, s.critic_x, True
        picks[i, : len(s.picks)] = s.picks
    return torch.from_numpy(x), torch.from_numpy(c), torch.from_numpy(mask), torch.from_numpy(picks)


def ppo_update(actor: Actor, critic: Critic, opt: torch.optim.Optimizer, steps: list[Step],
               returns: np.ndarray[Any, np.dtype[np.float64]], args: TrainArgs,
               rng: np.random.Generator) -> dict[str, float]:
    """One PPO update; advantages are ``returns - value`` (one return per episode)."""
    old_logp = torch.tensor([s.logp for s in steps], dtype=torch.float32)
    values = torch.tensor([s.value for s in steps], dtype=torch.float32)
    ret = torch.tensor(returns, dtype=torch.float32)
    adv = ret - values
    adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(adv) > 1 else adv
    stats: dict[str, list[float]] = {k: [] for k in UPDATE_STATS}
    for _ in range(args.update_epochs):
        order = rng.permutation(len(steps))
        for lo in range(0, len(order), args.minibatch):
            mb = order[lo : lo + args.minibatch]
            x, c, mask, picks = _pad([steps[i] for i in mb], args.top_m)
            scores: torch.Tensor = actor(x)
            logp = plackett_luce_logp(scores, mask, picks)
            ratio = torch.exp(logp - old_logp[mb])
            a = adv[mb]
            pg = torch.max(-a * ratio, -a * torch.clamp(ratio, 1 - args.clip, 1 + args.clip)).mean()
            v = critic(c, mask)
            vloss = 0.5 * ((v - ret[mb]) ** 2).mean()
            ent = first_pick_entropy(scores, mask).mean()
            loss = pg - args.ent_coef * ent + args.vf_coef * vloss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_([*actor.parameters(), *critic.parameters()], args.max_grad_norm)
            opt.step()
            with torch.no_grad():
                log_ratio = logp - old_logp[mb]
                stats["approx_kl"].append(float(((ratio - 1) - log_ratio).mean()))
                stats["clipfrac"].append(float(((ratio - 1).abs() > args.clip).float().mean()))
            stats["policy_loss"].append(pg.item())
            stats["value_loss"].append(vloss.item())
            stats["entropy"].append(ent.item())
    return {k: float(np.mean(v)) if v else math.nan for k, v in stats.items()}


# ----------------------------------------------------------------------------- a run's set-up
@dataclass
class Session:
    """What every trainer shares (PPO here, CEM in ``train.cem``): the checked arguments, the networks,
    the rollout pool, the episode windows (all or contended), the fixed validation windows, the warm start,
    the clock, the best validated actor and the CSV rows. Trainers call ``consider_start``, then
    ``rollouts``, ``consider`` and ``record`` per iteration, and end with ``finish``."""

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
        critic = _state(self.critic)
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
        self.start_val = self.consider(0, _state(self.actor))
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
        metric = "" if args.metric == TrainArgs.metric else f", reward: {args.metric}"
        rivals = rival_names(args.rivals)
        title = (f"{args.trace}: RLTune vs {', '.join([args.base, *rivals])} "
                 f"({args.mode} mode, {args.algo}{backfill}{metric})")
        plot_curve(self.rows, args.out / "training_curve.png", title, self.start_val, reward_label,
                   rivals=bool(rivals))
        return export_model(self.actor, args, train_minutes, self.rows, self.best, self.warm, self.start_val,
                            self.init)


def _check(args: TrainArgs) -> None:
    if args.algo not in ("ppo", "cem"):
        raise UserError(f"algo {args.algo!r}: expected 'ppo' or 'cem'")
    if args.mode not in ("daemon", "event"):
        raise UserError(f"mode {args.mode!r}: expected 'daemon' or 'event'")
    if args.features not in ("sampled", "naive"):
        raise UserError(f"features {args.features!r}: expected 'sampled' or 'naive'")
    if not args.react >= 0:
        raise UserError(f"react {args.react:g}: must be 0 (off) or a positive number of seconds")
    if args.hidden < 0:
        raise UserError(f"hidden {args.hidden}: expected 0 (a linear scorer) or a positive width")
    if args.episodes not in ("all", "contended"):
        raise UserError(f"episodes {args.episodes!r}: expected 'all' or 'contended'")
    if args.episodes == "contended" and args.screen_episodes < 2:
        raise UserError("screen_episodes must be at least 2 with episodes 'contended'")
    if args.init is not None and args.warm_start_episodes > 0:
        raise UserError(f"--init {args.init} starts from that model's weights: drop warm_start_episodes")
    checked_metric(args.metric)
    _check_rivals(args)
    checked_reservations(args.bf_reservations)
    if args.starvation_reference not in GUARD_REFERENCES:
        raise UserError(f"starvation_reference {args.starvation_reference!r}: expected one of "
                        f"{', '.join(GUARD_REFERENCES)}")


def _check_rivals(args: TrainArgs) -> None:
    names = rival_names(args.rivals)
    for name in names:
        if name not in BASELINES:
            raise UserError(f"rivals {name!r}: expected heuristics from {', '.join(BASELINES)}")
        if name == args.base:
            raise UserError(f"rivals {name}: it is the base policy already; drop it")
    if len(set(names)) < len(names):
        raise UserError(f"rivals {args.rivals!r}: a policy is named twice")


def networks(args: TrainArgs) -> tuple[Actor, Critic]:
    """The actor (``hidden`` 0: one linear layer) and the critic (its own width, 64 for a linear actor)."""
    dim = _input_dim(args.features)
    return Actor(dim, args.hidden), Critic(5, args.hidden or 64)


def open_session(args: TrainArgs) -> Session:
    """Check the arguments, seed everything, start the pool, choose the episode and validation windows
    and run the warm start. The caller must ``close()`` the session."""
    t_start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    _check(args)
    actor, critic = networks(args)
    init = None
    if args.init is not None:  # checked before the trace loads: a wrong model is one line, at once
        init = load_initial_actor(actor, args)
    _worker_init(args)  # also validates the trace in the main process
    episodes: Episodes = _W["episodes"]
    n_starts = episodes.n_starts
    workers = args.workers or os.cpu_count() or 1
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "checkpoints").mkdir(exist_ok=True)
    pool = None
    if workers > 1:
        ctx = multiprocessing.get_context("spawn")  # no fork after torch started its threads
        pool = ProcessPoolExecutor(workers, ctx, initializer=_worker_init, initargs=(args,))
    try:
        # episode starts: anywhere in the training split, or only its contended windows
        pool_starts: np.ndarray[Any, np.dtype[np.int64]] | None = None
        if args.episodes == "contended":
            cand = np.random.default_rng(args.seed + 104729).integers(0, n_starts, args.screen_episodes)
            parts = [p.tolist() for p in np.array_split(cand, workers)]
            scores = [x for part in (pool.map(_screen, parts) if pool is not None else map(_screen, parts))
                      for x in part]
            pool_starts = contended_starts(cand, scores, args.contended_share)
        session = Session(args, actor, critic, t_start, rng, workers, pool, pool_starts, n_starts, [], {},
                          None, init=init)
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


# ----------------------------------------------------------------------------- the loop
def train(args: TrainArgs) -> dict[str, Any]:
    """Train until ``args.minutes`` (or ``max_iterations``) and export the best validated actor."""
    if args.algo == "cem":
        # cem builds on this module's session and episodes (it imports ppo at its top), so it can only be
        # imported once ppo has loaded
        from rltune_daemon.train.cem import train_cem

        return train_cem(args)
    session = open_session(args)
    actor, critic, rng = session.actor, session.critic, session.rng
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=args.lr)
    try:
        session.consider_start()
        it = 0
        while not session.done(it):
            it += 1
            starts = session.draw(rng, args.episodes_per_iter)
            jobs = [(int(s), int(rng.integers(2**31))) for s in starts]
            episodes = [ep for ep in session.spread(_state(actor), jobs, deterministic=False)
                        if not ep["skipped"]]
            if not episodes:
                continue
            steps = [st for ep in episodes for st in ep["steps"]]
            returns = np.array([ep["reward"] for ep in episodes for _ in ep["steps"]], dtype=np.float64)
            # no update without steps, but the row keeps every column (the CSV header is the first row's)
            stats = (ppo_update(actor, critic, opt, steps, returns, args, rng) if steps
                     else dict.fromkeys(UPDATE_STATS, math.nan))
            row: dict[str, Any] = {
                "iteration": it, "minutes": session.elapsed / 60.0, "episodes": len(episodes),
                "steps": len(steps), **batch_means(episodes), **stats, "val_reward": math.nan,
            }
            if it % args.validate_every == 0 or it == 1:
                row["val_reward"] = session.consider(it, _state(actor))
                torch.save({"actor": actor.state_dict(), "critic": critic.state_dict(),
                            "optimizer": opt.state_dict(), "iteration": it, "args": asdict(args)},
                           args.out / "checkpoints" / "last.pt")
            session.record(row)
            if not args.progress:
                print(f"iter {it} min {row['minutes']:.1f} episodes {row['episodes']} "
                      f"reward {row['reward']:+.3f} "
                      f"val {row['val_reward']:+.3f} bsld {row['rl_bsld']:.2f}/{row['base_bsld']:.2f} "
                      f"wait {row['rl_wait']:.0f}/{row['base_wait']:.0f}", flush=True)
            session.tick(it, it=str(it), reward=f"{row['reward']:+.3f}",
                         val=f"{session.best['val_reward']:+.3f}")
    finally:
        session.close()
    return session.finish()


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


def warm_start(actor: Actor, args: TrainArgs, episodes: Episodes,
               starts: np.ndarray[Any, np.dtype[np.int64]]) -> dict[str, float]:
    """Behaviour-clone the base policy's ranking (see ``imitation``); returns what was done."""
    t0 = time.perf_counter()
    samples = []
    for start in starts:
        history = episodes.history(int(start)) if args.features == "sampled" else None
        rec = ImitationRecorder(episodes.prime(make_policy(args.base), int(start)), args.features,
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
