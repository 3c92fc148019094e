"""Trace-driven, event-driven simulator of a Slurm GPU cluster (priority order + EASY backfill)."""

from rltune_daemon.sim.config import SimConfig
from rltune_daemon.sim.controller import Controller, PolicyController
from rltune_daemon.sim.engine import SimResult, Simulator, simulate

__all__ = [
    "Controller", "PolicyController", "SimConfig", "SimResult", "Simulator", "simulate",
]
