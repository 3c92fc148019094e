"""Text formats shared by the live Slurm backend and the trace loaders.

``slurm``: Slurm's durations, timestamps, memory sizes, TRES, GRES and host lists. The backend reads
them from ``squeue``/``scontrol`` and the loaders from ``sacct`` dumps and cluster files; the parsers
sit here, below both, so the backend can reuse the ``sacct`` loader without the two packages importing
each other.
"""
