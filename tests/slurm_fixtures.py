"""Fixtures that start a real local Slurm cluster (filled in by the Slurm backend work)."""
