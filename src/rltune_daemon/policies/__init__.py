"""Scheduling policies: heuristics of paper Table 5, Slurm multifactor, QSSF and the learned actor.

Every policy scores pending jobs through ``Policy.scores`` (lower runs first), so the simulator and the
daemon call the same code.
"""

from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.registry import BASELINES, make_policy

__all__ = ["BASELINES", "Policy", "make_policy"]
