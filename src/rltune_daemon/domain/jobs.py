"""Jobs as every source produces them: trace loaders, generators and the Slurm backend."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass


@dataclass(frozen=True, slots=True)
class Job:
    """A batch job request.

    Times are seconds. ``submit`` is relative to the trace start for traces and the Unix epoch for live
    Slurm jobs. ``time_limit`` is what the user *requested* (schedulers, backfill and features see only
    this); ``runtime`` is the true run time, known only for traces and used only by the simulator.
    ``gpu_types`` lists acceptable GPU types (empty: any). ``nodes`` is a requested node count (0: the
    scheduler decides, ``ceil(gpus / gpus_per_node)``). ``cpus``/``mem_mb`` of 0 mean "proportional to the
    GPU share of a node", which is how Slurm sites commonly set DefCpuPerGPU/DefMemPerGPU.
    """

    id: str
    submit: float
    gpus: int
    time_limit: float
    # the rest by keyword only: side by side they are ints (nodes, cpus, mem_mb) or strings (user,
    # account, partition, qos) that a wrong position would swap without an error
    _: KW_ONLY
    runtime: float | None = None
    gpu_types: tuple[str, ...] = ()
    nodes: int = 0
    cpus: int = 0
    mem_mb: int = 0
    user: str = ""
    account: str = ""
    partition: str = ""
    qos: str = ""

    def __post_init__(self) -> None:
        if self.gpus < 0:
            raise ValueError(f"job {self.id}: negative GPU count {self.gpus}")
        if self.time_limit <= 0:
            raise ValueError(f"job {self.id}: time limit must be positive, got {self.time_limit}")
        if self.runtime is not None and self.runtime < 0:
            raise ValueError(f"job {self.id}: negative runtime {self.runtime}")


def job_order(job_id: str) -> tuple[int, str]:
    """Sort key of Slurm job ids as numbers (``"9"`` before ``"10"``) that never fails on other text."""
    return len(job_id), job_id
