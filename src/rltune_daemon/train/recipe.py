"""Re-run a trained model's recipe (``rltune train --config MODEL``).

A training run stops on a time budget (``--minutes``), which no second run can repeat: a faster machine
fits more iterations into 30 minutes. What a manifest records can be repeated: every setting of the run,
its seed and the number of iterations it completed. An ML engineer re-runs that to check that a model
comes out of this code and seed, or to rebuild it elsewhere; the result is compared with the model
weight by weight (``actor_difference``). Rollouts use one intra-op thread and return episodes in a fixed
order, so the number of cores and workers does not enter.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch

from rltune_daemon.errors import UserError
from rltune_daemon.policies.learned import MODEL_FILE, actor_sha256, read_manifest
from rltune_daemon.train.args import TrainArgs, rollout_settings
from rltune_daemon.train.reward import REWARD_METRIC, REWARD_METRIC_MEANS

# TrainArgs fields that are not the recipe: where the run writes, how it is run and shown.
NOT_RECIPE = frozenset({"trace", "out", "opts", "cluster", "init", "workers", "progress", "max_iterations"})
# Settings this version no longer has, with the value whose run it still repeats (every decision shares
# the episode's reward, validation windows anywhere in the training part, an actor that ranks on its own,
# a reward against the base policy alone, the mean of the BSLD and wait gaps, each episode on its trace's
# own cluster and jobs),
# and the settings that only acted with another value of them.
RETIRED = {"credit": "episode", "validation": "anywhere", "reach": 0.0, "rivals": "",
           "metric": REWARD_METRIC_MEANS, "vary": False}
RETIRED_WITH = frozenset({"gamma", "gae_lambda", "reach_beta"})
# Settings added later, with the value every run had before: a manifest without them ran with these.
BEFORE = {"reorder": "queue", "next_in_line": 0}


def _start_model(model: Path, manifest: dict[str, Any], init: Path | None) -> Path | None:
    """The model a fine-tuned run started from: ``init`` or the recorded path, checked by its hash."""
    recorded = manifest.get("init")
    if not recorded:
        if init is not None:
            raise UserError(f"--config {model}: it was not fine-tuned from another model; drop --init")
        return None
    want = str(recorded.get("actor_sha256", ""))
    path = init if init is not None else Path(str(recorded.get("path", "")))
    have = actor_sha256(path)
    if have != want:
        found = f"{path} has no model" if have is None else f"{path} holds another model"
        raise UserError(f"--config {model}: it was fine-tuned from the model whose {MODEL_FILE} has sha256 "
                        f"{want}…, and {found}; pass --init with that model's directory")
    return path


def recipe_args(model: Path, out: Path, *, init: Path | None = None, workers: int = 0,
                heldout_windows: int | None = None, progress: bool = False) -> tuple[TrainArgs, list[str]]:
    """``TrainArgs`` that repeat ``model``'s run into ``out``, and notes on what may keep the result
    from being the same (settings the manifest predates, another rollout guard, another torch)."""
    manifest = read_manifest(model)
    hp = manifest.get("hyperparameters")
    done = manifest.get("iterations")
    if not isinstance(hp, dict) or not isinstance(done, int) or not manifest.get("trace"):
        raise UserError(f"--config {model}: its manifest records no hyperparameters or iteration count "
                        "(made by an older version); train it again with the command in its docs")
    if done < 1:
        raise UserError(f"--config {model}: it records {done} iterations, nothing to repeat")
    for key, kept in RETIRED.items():
        if hp.get(key, kept) != kept:
            raise UserError(f"--config {model}: it was trained with {key} {hp[key]!r}, which this version no "
                            "longer runs; it cannot be repeated")
    fields = {f.name for f in dataclasses.fields(TrainArgs)} - NOT_RECIPE
    notes = []
    before = {k: v for k, v in BEFORE.items() if k not in hp}
    missing = sorted(fields - hp.keys() - before.keys())
    if missing:
        notes.append(f"its manifest predates {', '.join(missing)}: this run uses the defaults")
    unknown = sorted(hp.keys() - fields - NOT_RECIPE - RETIRED.keys() - RETIRED_WITH)
    if unknown:
        notes.append(f"this version has no {', '.join(unknown)}: ignored")
    settings = {**before, **{k: v for k, v in hp.items() if k in fields}}
    if heldout_windows is not None:
        settings["heldout_windows"] = heldout_windows
    args = TrainArgs(trace=str(manifest["trace"]), out=out, opts=dict(manifest.get("trace_options") or {}),
                     cluster=manifest.get("cluster"),
                     init=_start_model(model, manifest, init), workers=workers, progress=progress,
                     max_iterations=done, **settings)
    rollouts = manifest.get("rollouts")
    now = rollout_settings(args)
    if rollouts is None:
        guard = f"reference {now['starvation_reference']}, stretch {now['starvation_stretch']:g}"
        notes.append("its manifest predates recorded rollout settings: episodes run under this version's "
                     f"guard ({guard})")
    elif rollouts != now:
        changed = ", ".join(f"{k} {rollouts.get(k)} -> {v}" for k, v in now.items() if rollouts.get(k) != v)
        notes.append(f"its episodes ran under other planner settings than this version's ({changed})")
    trained = manifest.get("reward_metric", REWARD_METRIC_MEANS)
    if trained != REWARD_METRIC:
        notes.append(f"it was rewarded with {trained!r}; this version's reward is {REWARD_METRIC!r} (the "
                     "worst size class's wait gap besides): the weights will differ")
    if manifest.get("torch") not in (None, torch.__version__):
        notes.append(f"trained with torch {manifest['torch']}, this is {torch.__version__}")
    return args, notes


def actor_difference(a: Path, b: Path) -> float | None:
    """Largest absolute weight difference between two models' actors (0.0: the same weights); None when
    their layers differ."""
    sa, sb = (torch.jit.load(str(d / MODEL_FILE)).state_dict() for d in (a, b))  # type: ignore[no-untyped-call]
    if sa.keys() != sb.keys() or any(sa[k].shape != sb[k].shape for k in sa):
        return None
    return max((float((sa[k] - sb[k]).abs().max()) for k in sa), default=0.0)
