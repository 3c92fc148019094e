"""``train(args)``: run the trainer ``args.algo`` names (``rltune train --algo``).

Each algorithm is one module with one loop (``train.ppo``, ``train.cem``) over the shared harness
(``train.harness``); this module only chooses between them, so neither trainer needs the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rltune_daemon.train.args import TrainArgs, checked_algo
from rltune_daemon.train.cem import train_cem
from rltune_daemon.train.ppo import train_ppo

TRAINERS: dict[str, Callable[[TrainArgs], dict[str, Any]]] = {"ppo": train_ppo, "cem": train_cem}


def train(args: TrainArgs) -> dict[str, Any]:
    """Train with ``args.algo`` until ``args.minutes`` (or ``max_iterations``); the exported manifest."""
    return TRAINERS[checked_algo(args.algo)](args)
