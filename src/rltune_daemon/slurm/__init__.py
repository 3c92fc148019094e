"""Slurm CLI backend: read pending/running jobs and node GRES state; apply Plans through scontrol."""
