"""rltune-daemon: learned priority and placement tuning for Slurm GPU clusters.

Data flows one way: source (Slurm | trace) -> Snapshot -> features -> actor -> placement -> Plan ->
applier (Slurm | simulator). Each stage lives in the package named after it.
"""

__version__ = "0.1.0"
