"""The planner: Snapshot + policy -> Plan. The daemon and the simulator call the same ``plan``."""

from rltune_daemon.planner.config import PlannerConfig
from rltune_daemon.planner.plan import PlannerMemory, plan

__all__ = ["PlannerConfig", "PlannerMemory", "plan"]
