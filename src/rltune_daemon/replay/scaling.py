"""Compressed time: what is divided by the speedup ``S`` on the real cluster, and what cannot be.

A replay runs the trace ``S`` times faster: a job sleeps ``runtime / S`` and is submitted at
``submit / S``. Every Slurm parameter that is a duration and shapes the start order is divided by ``S``
too, so that Slurm's decisions are the ones it would take in real time. Three floors break the
scaling and are reported, not hidden: Slurm's scheduler intervals are whole seconds (at least 1 s,
i.e. ``S`` seconds of trace time), ``--time`` is whole minutes rounded up (FACTS i), and
``PriorityCalcPeriod`` is at least a minute.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from rltune_daemon.domain.jobs import Job
from rltune_daemon.errors import UserError

# Slurm 22.05 defaults of the time-valued parameters we scale (seconds unless said otherwise).
BF_INTERVAL = 30.0
SCHED_INTERVAL = 60.0
BATCH_SCHED_DELAY = 3.0
PRIORITY_MAX_AGE = 7 * 86400.0
PRIORITY_DECAY_HALF_LIFE = 7 * 86400.0
PRIORITY_CALC_PERIOD = 300.0
# Slurm's backfill plans no further ahead than bf_window (default one day). The simulator plans
# without a horizon, and a busy 256-job window has a backlog of many hours, so the window is a week
# of trace time: long enough that every queued job can hold its reservation on both sides.
BF_WINDOW = 7 * 86400.0
# The priority weights of a replay cluster. Fair-share is 0: every replay job is submitted by one
# user, so fair-share cannot order them, it would only drift with decayed usage between
# recalculations. Age and job size are Slurm's factors with the template's job-size/partition weights.
PRIORITY_WEIGHTS = {"PriorityWeightAge": "1000", "PriorityWeightJobSize": "1000",
                    "PriorityWeightPartition": "1000", "PriorityWeightFairshare": "0",
                    "PriorityWeightQOS": "0", "PriorityWeightTRES": ""}  # "": no TRES factor

SPEEDUP_MIN, SPEEDUP_MAX = 1.0, 3600.0


def checked_speedup(speedup: float) -> float:
    if not SPEEDUP_MIN <= speedup <= SPEEDUP_MAX or not math.isfinite(speedup):
        raise UserError(f"--speedup {speedup:g}: must be between {SPEEDUP_MIN:g} and {SPEEDUP_MAX:g}")
    return float(speedup)


def whole_seconds(seconds: float) -> int:
    """A scaled interval as Slurm takes it: whole seconds, at least 1."""
    return max(1, round(seconds))


def whole_minutes(seconds: float) -> int:
    """A scaled duration in whole minutes, at least 1 (Slurm's unit for PriorityMaxAge and friends)."""
    return max(1, math.ceil(seconds / 60.0 - 1e-9))


def conf_overrides(speedup: float) -> dict[str, str]:
    """slurm.conf lines of a replay cluster: each time-valued parameter that shapes the start order,
    divided by ``speedup`` (docs/fidelity.md lists them with the floors)."""
    s = checked_speedup(speedup)
    sched = ",".join((
        f"bf_interval={whole_seconds(BF_INTERVAL / s)}",
        "bf_resolution=1",  # default 60 s; scaled it would be below Slurm's 1-s floor
        "bf_continue",  # a pass interrupted by the lock yield goes on where it stopped, as unscaled
        f"bf_window={whole_minutes(BF_WINDOW / s)}",
        f"sched_interval={whole_seconds(SCHED_INTERVAL / s)}",
        f"batch_sched_delay={round(BATCH_SCHED_DELAY / s)}",
    ))
    return {
        "SchedulerParameters": sched,
        "PriorityMaxAge": str(whole_minutes(PRIORITY_MAX_AGE / s)),
        "PriorityDecayHalfLife": str(whole_minutes(PRIORITY_DECAY_HALF_LIFE / s)),
        "PriorityCalcPeriod": str(whole_minutes(PRIORITY_CALC_PERIOD / s)),
        **PRIORITY_WEIGHTS,
    }


def limit_minutes(limit: float, speedup: float) -> int:
    """The ``--time`` minutes of a job whose trace limit is ``limit`` seconds: Slurm rounds ``--time``
    up to whole minutes, so a replay asks for the rounded value itself."""
    return max(1, math.ceil(limit / speedup / 60.0 - 1e-9))


def replay_limit(limit: float, speedup: float) -> float:
    """The limit both the real cluster and the simulator use, in trace seconds."""
    return limit_minutes(limit, speedup) * 60.0 * speedup


@dataclass(frozen=True)
class JobRequest:
    """One job's ``sbatch`` request: partition, nodes, GPUs per node (and type), minutes, sleep."""

    name: str
    partition: str
    nodes: int
    gpus_per_node: int
    gpu_type: str
    minutes: int
    sleep: float

    def argv(self) -> list[str]:
        gres = f"gpu:{self.gpu_type}:{self.gpus_per_node}" if self.gpu_type else f"gpu:{self.gpus_per_node}"
        # One task, one CPU per node (Slurm's default for -N k): the CPU count Slurm's job-size factor
        # reads, which the simulator's copy of this cluster's priority assumes too.
        return ["sbatch", "--parsable", "-J", self.name, "-p", self.partition, "-N", str(self.nodes),
                "--ntasks-per-node=1", f"--gres={gres}", "-t", str(self.minutes), "-o", "/dev/null",
                "-D", "/tmp", "--wrap", f"sleep {self.sleep:.3f}"]

    def shell(self) -> str:
        return shlex.join(self.argv())


def job_request(job: Job, name: str, partition: str, speedup: float, gpus_per_node_max: int) -> JobRequest:
    """The request of a trace job (its limit already the replay limit, ``replay_limit``)."""
    if len(job.gpu_types) > 1:
        raise UserError(f"job {job.id} accepts {len(job.gpu_types)} GPU types; a replay can pin one or any")
    if job.runtime is None:
        raise UserError(f"job {job.id} has no run time: a replay needs the trace's true run times")
    nodes = job.nodes or 1
    per_node = math.ceil(job.gpus / nodes)
    if job.nodes == 0 and per_node > gpus_per_node_max:
        raise UserError(f"job {job.id} asks {job.gpus} GPUs and names no node count; no node holds that many")
    return JobRequest(name, partition, nodes, per_node, job.gpu_types[0] if job.gpu_types else "",
                      limit_minutes(job.time_limit, speedup), job.runtime / speedup)
