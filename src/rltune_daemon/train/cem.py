"""Cross-entropy search over a linear actor's weights (``rltune train --algo cem``, ``hidden = 0``).

PPO estimates a gradient from sampled orders and spreads one episode's reward over hundreds of
decisions; in a 30-minute budget on two cores that signal stays below the noise between windows
(docs/learning.md, "Known limits"). The cross-entropy method (Rubinstein; Szita & Lőrincz's Tetris
agent) asks a blunter question that the simulator answers directly: *which of these weight vectors
schedules the same windows better?* Each generation draws ``cem_population`` weight vectors from a
diagonal Gaussian, runs every one deterministically, as it would be deployed, on the **same**
``cem_episodes`` windows (so candidates are compared on equal terms, not on luckier windows), and
refits the Gaussian to the best ``cem_elite`` share. The reward is PPO's: the normalised gap to the
base policy on each window.

A search like this only works in few dimensions, so the actor is one linear layer over the 9 actor
inputs: a scheduling formula with one weight per input (features.md), which the manifest lists
(``linear_scorer``) so an admin can read what was learned. It starts from the warm start (an imitation
of the base policy) or a trained model (``--init``). Episodes, validation and export are the shared
harness's, as PPO's (``harness.Session``): the exported weights are the validated mean that scored best.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from rltune_daemon.errors import UserError
from rltune_daemon.train.args import TrainArgs
from rltune_daemon.train.harness import batch_means, open_session, state_copy

VALIDATE_EVERY = 2  # generations; a generation runs ~3x the episodes of a PPO iteration (validated every 5)
SMOOTHING = 0.5  # each generation moves the mean and spread half-way to the elite's: a few noisy windows
SIGMA_FLOOR = 0.2  # ... and the spread stays above this share of the first one, so the search keeps moving
F64 = np.ndarray[Any, np.dtype[np.float64]]


def check_cem(args: TrainArgs) -> None:
    if args.hidden != 0:
        raise UserError(f"--algo cem searches a linear scorer's weights, not a hidden layer of "
                        f"{args.hidden}: set hidden = 0")
    if args.cem_population < 2 or args.cem_episodes < 1:
        raise UserError(f"cem_population {args.cem_population} / cem_episodes {args.cem_episodes}: "
                        "expected at least 2 candidates and 1 window per generation")
    if not 0.0 < args.cem_elite < 1.0 or args.cem_sigma <= 0:
        raise UserError(f"cem_elite {args.cem_elite:g} / cem_sigma {args.cem_sigma:g}: expected an elite "
                        "share in (0, 1) and a positive spread")


def elite_fit(mean: F64, sigma: F64, cands: F64, scores: F64, share: float, floor: F64) -> tuple[F64, F64]:
    """The next mean and spread: half-way (``SMOOTHING``) from the current ones to the best ``share`` of
    candidates' (ties keep the earlier candidate); the spread at least ``floor``. Plain CEM refits to the
    elite outright and, with 3 elites of 12 scored on 4 windows, its spread collapses within a few
    generations onto whichever candidates were lucky."""
    n_elite = max(1, round(share * len(cands)))
    elite = cands[np.argsort(-scores, kind="stable")[:n_elite]]
    new_mean = SMOOTHING * elite.mean(axis=0) + (1 - SMOOTHING) * mean
    new_sigma = SMOOTHING * elite.std(axis=0) + (1 - SMOOTHING) * sigma
    return new_mean, np.maximum(new_sigma, floor)


def train_cem(args: TrainArgs) -> dict[str, Any]:
    """Search until ``args.minutes`` (or ``max_iterations`` generations); export the best validated mean."""
    check_cem(args)
    session = open_session(args)
    actor, rng = session.actor, session.rng

    def weights(theta: F64) -> dict[str, torch.Tensor]:
        vector_to_parameters(torch.from_numpy(theta).float(), actor.parameters())
        return state_copy(actor)

    mean = parameters_to_vector(actor.parameters()).detach().double().numpy().copy()
    size = float(np.linalg.norm(mean)) / math.sqrt(len(mean))
    sigma = np.full(len(mean), args.cem_sigma * (size if size > 0 else 1.0))
    floor = SIGMA_FLOOR * sigma
    try:
        session.consider_start()
        it = 0
        while not session.done(it):
            it += 1
            jobs = [(int(s), 0) for s in session.draw(rng, args.cem_episodes)]
            cands = mean + sigma * rng.standard_normal((args.cem_population, len(mean)))
            results = session.rollouts([(weights(t), jobs) for t in (mean, *cands)], deterministic=True)
            scores = np.array([np.mean([ep["reward"] for ep in r]) for r in results[1:]])
            mean, sigma = elite_fit(mean, sigma, cands, scores, args.cem_elite, floor)
            row: dict[str, Any] = {
                "iteration": it, "minutes": session.elapsed / 60.0,
                "episodes": len(results) * len(jobs), "steps": 0, **batch_means(results[0]),
                "population_reward": float(scores.mean()), "top_reward": float(scores.max()),
                "sigma": float(sigma.mean()), "val_reward": math.nan,
            }
            if it % VALIDATE_EVERY == 0 or it == 1:
                row["val_reward"] = session.consider(it, weights(mean))
                # tensors, not numpy arrays: torch.load's default (weights_only) reads them
                torch.save({"mean": torch.from_numpy(mean), "sigma": torch.from_numpy(sigma),
                            "iteration": it}, args.out / "checkpoints" / "last.pt")
            session.record(row)
            if not args.progress:
                print(f"gen {it} min {row['minutes']:.1f} mean {row['reward']:+.3f} "
                      f"population {row['population_reward']:+.3f} top {row['top_reward']:+.3f} "
                      f"sigma {row['sigma']:.3f} val {row['val_reward']:+.3f}", flush=True)
            session.tick(it, gen=str(it), mean=f"{row['reward']:+.3f}",
                         val=f"{session.best['val_reward']:+.3f}")
    finally:
        session.close()
    return session.finish("reward of the generation's mean weights")
