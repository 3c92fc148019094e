"""Export a trained actor: TorchScript ``actor.pt`` + ``manifest.json``, the training curve, and the
held-out evaluation recorded in the manifest (never used to pick the model: that is the validation
split's job)."""

from __future__ import annotations

import math
import platform
from pathlib import Path
from typing import Any

import torch

from rltune_daemon import features
from rltune_daemon.features import naive
from rltune_daemon.policies.learned import MODEL_FILE
from rltune_daemon.train.args import TrainArgs, rollout_settings
from rltune_daemon.train.heldout import HeldoutSpec, measure_heldout, write_manifest
from rltune_daemon.train.network import Actor
from rltune_daemon.train.reward import REWARD_METRIC


def export_model(actor: Actor, args: TrainArgs, minutes: float, rows: list[dict[str, Any]],
                 best: dict[str, Any], warm_start: dict[str, float] | None = None,
                 start_val: float | None = None, init: dict[str, Any] | None = None) -> dict[str, Any]:
    out = args.out
    actor.eval()
    scripted = torch.jit.script(actor)
    torch.jit.save(scripted, str(out / MODEL_FILE))
    sampled = args.features == "sampled"
    manifest: dict[str, Any] = {
        "format": 1,
        "trace": args.trace,
        "trace_options": args.opts,
        "cluster": args.cluster,  # the nodes a site's own trace ran on (None: the trace's own cluster)
        "estimates": args.estimates,
        "base_policy": args.base,
        "mode": args.mode,
        "features": args.features,
        "placement": sampled,  # the naive ablation also runs without the MILP
        "schema_hash": features.SCHEMA_HASH if sampled else naive.NAIVE_SCHEMA_HASH,
        "schema": features.schema() if sampled else naive.naive_schema(),
        "input_dim": features.ACTOR_DIM if sampled else naive.NAIVE_DIM,
        "seed": args.seed,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "training_minutes": round(minutes, 2),
        "iterations": len(rows),
        "best_iteration": best.get("iteration"),
        "validation_reward": None if best.get("val_reward", -math.inf) == -math.inf else best["val_reward"],
        "reward_metric": REWARD_METRIC,
        "warm_start": warm_start or None,
        "init": init,  # --init: the model this one was fine-tuned from (path, actor hash, its run)
        "validation_reward_start": start_val,  # iteration 0: --init's model
        "episode_jobs": args.episode_jobs,
        "bf_reservations": args.bf_reservations,  # the simulator's backfill it was trained and measured under
        "rollouts": rollout_settings(args),  # the planner settings its episodes ran under (guard, cycles)
        "hyperparameters": {k: v for k, v in vars(args).items()
                            if k not in {"out", "trace", "opts", "cluster"} and not isinstance(v, Path)},
    }
    if len(actor.net) == 1:  # one linear layer: a weighted sum an admin can read (weight per input)
        manifest["linear_scorer"] = linear_weights(actor, args.features)
    write_manifest(out, manifest)
    if args.heldout_windows > 0:
        spec = HeldoutSpec(trace=args.trace, base=args.base, opts=args.opts, cluster=args.cluster,
                           windows=args.heldout_windows,
                           window_size=args.heldout_window_size, seed=args.seed, estimates=args.estimates,
                           mode=args.mode, bf_reservations=args.bf_reservations, jobs=args.workers,
                           slurm_config=args.slurm_config)
        manifest["heldout"] = measure_heldout(out, spec, progress=args.progress)
        write_manifest(out, manifest)
    return manifest


def linear_weights(actor: Actor, mode: str) -> dict[str, float]:
    """A one-layer actor's weight per named input (and its bias): score = sum(weight x input) + bias."""
    layer = actor.net[0]
    assert isinstance(layer, torch.nn.Linear)
    names = [s.name for s in features.ACTOR_SLOTS] if mode == "sampled" else list(naive.NAIVE_COLUMNS)
    w = layer.weight.detach().double().numpy()[0]
    return {**{n: round(float(v), 6) for n, v in zip(names, w, strict=True)},
            "bias": round(float(layer.bias.detach()[0]), 6)}


def plot_curve(rows: list[dict[str, Any]], path: Path, title: str, start_val: float | None = None,
               reward_label: str = "training reward (sampled)") -> None:
    """Rewards and BSLD per iteration; ``start_val`` (a fine-tuning's starting model) is drawn at 0."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not rows:
        return
    it = [r["iteration"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    ax1.plot(it, [r["reward"] for r in rows], label=reward_label, alpha=0.6)
    val = [(r["iteration"], r["val_reward"]) for r in rows if not math.isnan(r["val_reward"])]
    if start_val is not None:
        val = [(0, start_val), *val]
    if val:
        ax1.plot(*zip(*val, strict=True), marker="o", label="validation reward (deterministic)")
    if start_val is not None:
        ax1.plot([0], [start_val], marker="s", color="black", ls="", label="the starting model (iteration 0)")
    ax1.axhline(0.0, color="grey", lw=0.8)
    ax1.set_ylabel("normalised gap to base\n(> 0: better than base)")
    ax1.legend(fontsize=8)
    ax1.grid(alpha=0.3)
    ax1.set_title(title)
    ax2.plot(it, [r["rl_bsld"] for r in rows], label="RLTune BSLD")
    ax2.plot(it, [r["base_bsld"] for r in rows], label="base BSLD", alpha=0.7)
    ax2.set_yscale("log")
    ax2.set_xlabel("iteration")
    ax2.set_ylabel("mean BSLD per batch")
    ax2.legend(fontsize=8)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
