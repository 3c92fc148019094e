"""Benchmarks of the daemon's parts that need no live Slurm (timing code for ``rltune bench``)."""
