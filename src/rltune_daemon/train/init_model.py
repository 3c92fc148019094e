"""Start a training from a trained model (``rltune train --init MODEL``): fine-tuning.

An ML engineer who deploys a shipped model on a cluster that differs from the one it was searched on
(another trace, another backfill: ``--bf-reservations``) wants to search *around* the formula that
already works rather than from a linear fit of the base policy. The model is loaded and checked as the
daemon loads it (``load_learned``: schema, a usable TorchScript archive), then its weights must fit
this run's actor exactly: same inputs, same layers. Any mismatch is one line naming the setting to give.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from rltune_daemon.errors import UserError
from rltune_daemon.policies.learned import load_learned, model_identity
from rltune_daemon.train.network import Actor

if TYPE_CHECKING:
    from rltune_daemon.train.args import TrainArgs


def _layers(state: dict[str, torch.Tensor]) -> list[int]:
    """The widths from input to output (``[9, 1]`` for a linear scorer, ``[9, 64, 32, 1]`` for PPO's).

    A state dict keeps the modules' registration order (input first); sorting the keys as text would put
    ``net.10`` before ``net.2``.
    """
    weights = [v for k, v in state.items() if k.endswith(".weight")]
    return [int(weights[0].shape[1]), *(int(w.shape[0]) for w in weights)] if weights else []


def _hidden_setting(widths: list[int]) -> str:
    return "hidden = 0" if len(widths) == 2 else f"hidden = {widths[1]}"


def load_initial_actor(actor: Actor, args: TrainArgs) -> dict[str, Any]:
    """Copy ``args.init``'s weights into ``actor``; returns what the manifest records of that model."""
    assert args.init is not None
    model = load_learned(args.init)
    where = f"--init {args.init}"
    if model.feature_mode != args.features:
        raise UserError(f"{where}: it reads {model.feature_mode!r} features; "
                        f"set features = {model.feature_mode!r}")
    state = {k: v.detach().clone() for k, v in model.actor.state_dict().items()}
    have, want = _layers(state), _layers(actor.state_dict())
    if have != want:
        hint = " (--algo cem searches linear scorers only)" if args.algo == "cem" and len(have) > 2 else ""
        raise UserError(f"{where}: its actor's layers are {'-'.join(map(str, have))}, this run's "
                        f"{'-'.join(map(str, want))}; set {_hidden_setting(have)}{hint}")
    actor.load_state_dict(state)
    return {"path": str(args.init), **model_identity(args.init)}
