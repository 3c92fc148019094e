"""PPO for the RLTune actor, in one readable loop (CleanRL's habit: typed arguments, seeding, one loop).

Each iteration samples ``episodes_per_iter`` training windows and runs the stochastic actor on them
(``harness``: the episodes, their reward, the rollout workers). The reward is given at the end of the
episode, as in the paper: every decision of the episode shares that return and the critic's value is
the baseline (advantage = return - value). Rollouts run in parallel over processes; updates run in
the main process. Every ``validate_every`` iterations the deterministic actor is validated, and the
best validated actor is the one exported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from rltune_daemon.train.args import TrainArgs
from rltune_daemon.train.harness import batch_means, open_session, state_copy
from rltune_daemon.train.network import Actor, Critic, first_pick_entropy, plackett_luce_logp
from rltune_daemon.train.sampling import Step

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


def train_ppo(args: TrainArgs) -> dict[str, Any]:
    """Train until ``args.minutes`` (or ``max_iterations``) and export the best validated actor."""
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
            episodes = [ep for ep in session.spread(state_copy(actor), jobs, deterministic=False)
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
                row["val_reward"] = session.consider(it, state_copy(actor))
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
