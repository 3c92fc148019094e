"""Time the Python side of one daemon cycle at a queue length, without a live Slurm: the read (parsing
the Slurm commands' outputs, the integrity checks, building the Snapshot) and the decision (``plan`` and
``steer``: settling the undo record, planning, choosing the writes) in a steady state.

``FakeSlurm`` is a seeded queue printed in exactly the formats ``slurm.reader`` asks for (``sprio``,
``squeue -o``, ``squeue -O``, ``sinfo -N``): pending jobs of 1-4 GPUs on the testbed's five nodes (or
``nodes`` generated ones), every GPU held by a running job as in ``rltune bench cycle``, with what a real
queue has besides: unsplit arrays (several task lines under one raw id), multi-partition jobs (one sprio
row per partition), held jobs (not in sprio), nice values, user-pinned
and excluded nodes, and accounts holding hostile text (``|``, newlines, multi-byte UTF-8). ``apply``
takes the daemon's updates (SiteFactor changes the priority as Slurm does; node lists are stored), so a
run of cycles reaches the state a daemon keeps for months: every job written once, a few moved per
cycle. ``CannedRunner`` serves those outputs through the real ``SlurmRunner`` accounting (call budget,
RPC bucket) with no process started, so ``SlurmReader.read`` is timed without Slurm's own seconds.

``bench_decide_read`` is the entry point (``rltune bench read --pending 10000``).
Timings are for comparing code versions on one machine; best of ``repeat`` runs.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from rltune_daemon.core.applier import Applier
from rltune_daemon.core.cycle import Core, Strict, run_cycle
from rltune_daemon.core.record import DaemonState
from rltune_daemon.core.steer import MAX_UPDATES_DEFAULT, Step, steer
from rltune_daemon.domain import Plan, Snapshot
from rltune_daemon.domain.history import FinishedRuns
from rltune_daemon.domain.updates import ApplyResult, Fate, JobResult, JobUpdate, ReadInfo, UpdateStatus
from rltune_daemon.formats.slurm import parse_memory_mb
from rltune_daemon.planner import PlannerConfig, PlannerMemory, plan
from rltune_daemon.policies.base import Policy
from rltune_daemon.slurm.errors import CommandTimeout
from rltune_daemon.slurm.parse import (
    SPRIO_FIELDS,
    SPRIO_TEXT_FIELDS,
    SQUEUE_JOB_FIELDS,
    SQUEUE_TEXT_FIELDS,
    parse_sinfo_nodes,
    parse_sprio,
    parse_squeue_jobs,
    parse_squeue_tres,
    render,
)
from rltune_daemon.slurm.reader import SlurmReader
from rltune_daemon.slurm.runner import SlurmRunner

# The paper's testbed (deploy/local-slurm/slurm.conf.in), as ``rltune bench cycle`` runs it.
TESTBED = (("k80-1", "k80", 2, 8, 32000), ("k80-2", "k80", 2, 8, 32000), ("m40-1", "m40", 1, 4, 16000),
           ("p100-1", "p100", 4, 8, 64000), ("p100-2", "p100", 4, 8, 64000))
# partition -> (PriorityTier, PriorityJobFactor, MaxTime as sinfo prints it)
PARTITIONS = {"gpu": (1, 1, "infinite"), "hipri": (2, 1, "1-00:00:00")}
DEFAULT_PARTITION = "gpu"
LIMITS = ("5:00", "30:00", "1:00:00", "4:00:00", "12:00:00", "1-00:00:00", "2-00:00:00", "UNLIMITED")
HOSTILE = ("evil|acct\n1|x|", "équipe-ü", "a\nPENDING|1|", "|||", "ok   ")
CLOCK = 1_795_000_000.0  # a fixed epoch (2026-11-18), so that every run prints the same text


def _ts(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%Y-%m-%dT%H:%M:%S")


@dataclass
class FakeJob:
    """One pending or running job record as Slurm would list it (an unsplit array: ``tasks`` > 1)."""

    job_id: str
    state: str
    user: str
    account: str
    partitions: tuple[str, ...]
    submit: float
    limit: str
    gpus: int
    gpu_type: str
    per: str  # how the GPUs were asked: "node" (%b), "job" (--gpus), "task" (--gpus-per-task)
    nodes: int
    cpus: int
    mem: str
    nice: int = 0
    held: bool = False
    eligible: bool = True
    reason: str = "Priority"
    req_nodes: str = ""
    exc_nodes: str = ""
    oversubscribe: str = "OK"
    tasks: tuple[int, ...] = ()
    site: int = 0
    fairshare: int = 0
    node_list: str = ""
    start: float | None = None


@dataclass
class FakeSlurm:
    """A seeded cluster state printed as the reader's commands print it (see module docstring)."""

    clock: float
    nodes: list[tuple[str, str, int, int, int]]
    jobs: list[FakeJob]
    node_parts: dict[str, tuple[str, ...]]
    calc_clock: float = 0.0  # when multifactor last recalculated the ages (PriorityCalcPeriod)

    def __post_init__(self) -> None:
        self.calc_clock = self.calc_clock or self.clock

    # ---- the queue ---------------------------------------------------------------------------

    @staticmethod
    def generate(n_pending: int, *, nodes: int = 0, idle: int = 0, seed: int = 0, clock: float = CLOCK
                 ) -> FakeSlurm:
        """``n_pending`` pending records; every GPU held by a running job but on the last ``idle`` nodes."""
        rng = random.Random(seed)
        if nodes:
            layout = [(f"gpu-{k:04d}", ("a100", "v100")[k % 2], 4 if k % 2 else 8, 64, 512000)
                      for k in range(nodes)]
        else:
            layout = list(TESTBED)
        node_parts: dict[str, tuple[str, ...]] = {name: ("gpu", "hipri") for name, *_ in layout}
        users = [f"user{k:02d}" for k in range(40)]
        jobs: list[FakeJob] = []
        next_id = 1000
        for name, gtype, gpus, cpus, _mem in layout[:len(layout) - idle]:  # blockers, as in bench cycle
            start = clock - rng.uniform(60, 3600)
            jobs.append(FakeJob(str(next_id), "RUNNING", rng.choice(users), "blockers", ("gpu",),
                                start - 30, "2-00:00:00", gpus, gtype, "node", 1, max(1, cpus // 2),
                                "4G", reason="None", node_list=name, start=start))
            next_id += 1
        types = sorted({n[1] for n in layout})
        for k in range(n_pending):
            u = rng.randrange(len(users))
            user = users[u]
            account = f"acct{u % 8}"
            if rng.random() < 0.01:
                account = rng.choice(HOSTILE)
            r = rng.random()
            parts = ("gpu",) if r < 0.9 else ("hipri",) if r < 0.95 else ("gpu", "hipri")
            gpus = rng.choice((1, 1, 1, 2, 2, 3, 4))
            per = rng.choices(("node", "job", "task"), (0.85, 0.1, 0.05))[0]
            gtype = rng.choice(types) if rng.random() < 0.7 else ""
            held = rng.random() < 0.004
            # no job waits on a dependency: sprio does not list one, so its SiteFactor is not read back and
            # the daemon writes it again every cycle (ReadInfo.site_factor_unknown), which moves its
            # neighbours too: a steady state would not be one
            dependency = False
            job = FakeJob(
                str(next_id), "PENDING", user, account, parts,
                clock - rng.uniform(0, 6 * 3600.0) * (k + 1) / n_pending, rng.choice(LIMITS), gpus, gtype,
                per, 2 if gpus == 4 and rng.random() < 0.1 else 1, rng.choice((1, 2, 4, 8)),
                rng.choice(("1000M", "4G", "16G", "32000M")),
                nice=rng.choices((0, 50, -100), (0.95, 0.04, 0.01))[0], held=held,
                eligible=not (held or dependency),
                reason="JobHeldUser" if held else "Dependency" if dependency else
                ("Resources" if k == 0 else "Priority"),
                req_nodes=layout[0][0] if rng.random() < 0.005 else "",
                exc_nodes=layout[-1][0] if rng.random() < 0.01 else "",
                oversubscribe="YES" if rng.random() < 0.02 else "OK",
                tasks=tuple(sorted(rng.sample(range(16), rng.randint(2, 6)))) if rng.random() < 0.02 else (),
                fairshare=(u * 37) % 500,
            )
            jobs.append(job)
            next_id += 1 if not job.tasks else 1 + max(job.tasks)
        return FakeSlurm(clock, layout, jobs, node_parts)

    def _factors(self, j: FakeJob) -> tuple[int, int, int, int]:
        """(age, fair-share, job size, partition) as multifactor weighs them (ages in minutes, capped)."""
        age = min(1000, int((self.calc_clock - j.submit) / 60.0))
        part = 1000 * PARTITIONS[j.partitions[0]][0]
        return age, j.fairshare, 10 * j.gpus, part

    def priority(self, j: FakeJob) -> int:
        if j.held:
            return 0
        return max(sum(self._factors(j)) + j.site - j.nice, 1)

    def advance(self, seconds: float, recalc: bool = False) -> None:
        """Time passes; with ``recalc`` the ages (and so the multifactor priorities) grow, as at Slurm's
        ``PriorityCalcPeriod``."""
        self.clock += seconds
        if recalc:
            self.calc_clock = self.clock

    def apply(self, updates: Sequence[JobUpdate]) -> None:
        by_id = {j.job_id: j for j in self.jobs}
        for u in updates:
            j = by_id.get(u.job_id)
            if j is None or j.state != "PENDING":
                continue
            if u.site_factor is not None:
                j.site = u.site_factor
            if u.exc_nodes is not None:
                j.exc_nodes = ",".join(u.exc_nodes)
            if u.req_nodes is not None:
                j.req_nodes = ",".join(u.req_nodes)

    # ---- the outputs -------------------------------------------------------------------------

    def _gres(self, j: FakeJob, count: int) -> str:
        return f"gres:gpu:{j.gpu_type}:{count}" if j.gpu_type else f"gres:gpu:{count}"

    def squeue_jobs(self) -> str:
        lines: list[str] = []
        for j in self.jobs:
            per_node = j.gpus // max(j.nodes, 1) if j.per == "node" else 0
            values = {
                "%A": j.job_id, "%F": j.job_id, "%K": "N/A", "%T": j.state, "%Q": str(self.priority(j)),
                "%y": str(j.nice), "%V": _ts(j.submit),
                "%S": _ts(j.start) if j.start is not None else ("N/A" if j.held else _ts(self.clock + 600)),
                "%l": j.limit, "%D": str(j.nodes), "%C": str(j.cpus), "%m": j.mem,
                "%b": self._gres(j, per_node) if per_node else "N/A", "%h": j.oversubscribe,
                "%N": j.node_list, "%n": j.req_nodes, "%x": j.exc_nodes, "%u": j.user, "%a": j.account,
                "%P": ",".join(j.partitions), "%q": "normal", "%r": j.reason,
            }
            for task in j.tasks or (None,):
                if task is not None:
                    values["%K"] = str(task)
                lines.append(render(SQUEUE_JOB_FIELDS, SQUEUE_TEXT_FIELDS, values))
        return "".join(lines)

    def squeue_tres(self) -> str:
        lines: list[str] = []
        for j in self.jobs:
            per_job = self._gres(j, j.gpus) if j.per == "job" else "N/A"
            per_task = self._gres(j, 1) if j.per == "task" else "N/A"
            ntasks = j.gpus if j.per == "task" else j.nodes
            alloc = f"cpu={j.cpus},mem={j.mem},node={j.nodes},billing={j.cpus}"
            eligible = _ts(j.submit) if j.eligible else "N/A"
            line = f"{j.job_id}|{per_job}|{per_task}|{ntasks}|{alloc}|{eligible}|\n"
            lines.extend([line] * max(len(j.tasks), 1))
        return "".join(lines)

    def sprio(self) -> str:
        lines: list[str] = []
        for j in self.jobs:
            if j.state != "PENDING" or not j.eligible:
                continue
            age, fs, size, part = self._factors(j)
            for p in j.partitions:
                values = {"%i": j.job_id, "%Y": str(self.priority(j)), "%S": str(j.site), "%A": str(age),
                          "%F": str(fs), "%J": str(size), "%P": str(part), "%Q": "0", "%B": "0",
                          "%N": str(j.nice), "%T": "", "%r": p}
                lines.append(render(SPRIO_FIELDS, SPRIO_TEXT_FIELDS, values))
        return "".join(lines)

    def sinfo(self) -> str:
        used = {name: [0, 0, 0] for name, *_ in self.nodes}  # GPUs, CPUs, memory of running jobs
        for j in self.jobs:
            if j.state == "RUNNING" and j.node_list in used:
                u = used[j.node_list]
                u[0] += j.gpus
                u[1] += j.cpus
                u[2] += parse_memory_mb(j.mem)
        lines: list[str] = []
        for name, gtype, gpus, cpus, mem in self.nodes:
            g, c, m = used[name]
            state = "mixed" if g or c else "idle"
            for p in self.node_parts[name]:
                tier, factor, limit = PARTITIONS[p]
                lines.append(f"{name}|gpu:{gtype}:{gpus}|gpu:{gtype}:{g}(IDX:0-{gpus - 1})|{state}|"
                             f"{c}/{cpus - c}/0/{cpus}|{mem}|{m}|"
                             f"{p}{'*' if p == DEFAULT_PARTITION else ''}|{tier}|{factor}|{limit}|\n")
        return "".join(lines)

    def outputs(self) -> dict[str, str]:
        """Each read command's stdout, keyed as ``CannedRunner`` looks them up."""
        return {"ping": "Slurmctld(primary) at localhost is UP\n", "sprio": self.sprio(),
                "squeue -o": self.squeue_jobs(), "squeue -O": self.squeue_tres(), "sinfo": self.sinfo()}

    def history(self, runs: int = 2000, seed: int = 0) -> FinishedRuns:
        """Finished runs of the queue's users, as ``sacct`` gives them to models that read history."""
        rng = np.random.default_rng(seed)
        users = sorted({j.user for j in self.jobs})
        pick = rng.integers(0, len(users), runs)
        return FinishedRuns(tuple(f"h{k}" for k in range(runs)), tuple(users[int(u)] for u in pick),
                            rng.integers(1, 5, runs).astype(np.int64), rng.uniform(60, 86400, runs),
                            self.clock - rng.uniform(0, 7 * 86400, runs))


def command_key(argv: Sequence[str]) -> str:
    prog = argv[0].rsplit("/", 1)[-1] if argv else ""
    if prog == "squeue":
        return "squeue -O" if "-O" in argv else "squeue -o"
    if prog == "scontrol" and "ping" in argv:
        return "ping"
    return prog


class CannedRunner(SlurmRunner):
    """A ``SlurmRunner`` whose commands print canned outputs (``outputs`` by ``command_key``) without
    starting a process: the call budget, RPC bucket and timeouts are the runner's own."""

    def __init__(self, outputs: Mapping[str, str], **kw: Any) -> None:
        super().__init__(**kw)
        self.outputs = dict(outputs)

    def _execute(self, full: Sequence[str], stdin: str | None, limit: float, encoding: str
                 ) -> tuple[int, str, str]:
        key = command_key(full)
        if key not in self.outputs:
            raise CommandTimeout(list(full), limit)
        out = self.outputs[key]
        if encoding != "latin-1":  # what the pipe would give: the text's bytes decoded as asked
            out = out.encode("latin-1", "replace").decode(encoding, "replace")
        return 0, out, ""


# ---- timing ------------------------------------------------------------------------------------


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, value = math.inf, None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def time_read(outputs: Mapping[str, str], repeat: int = 3, clock: float | None = None) -> dict[str, float]:
    """Seconds of ``SlurmReader.read`` on canned outputs (``read``) and of each parser alone."""
    runner = CannedRunner(outputs)
    reader = SlurmReader(runner, wall=time.time if clock is None else lambda: clock)
    read_s, _ = _best(reader.read, repeat)
    out = {"read": read_s}
    for name, fn, key in (("parse_sprio", parse_sprio, "sprio"), ("parse_squeue_jobs", parse_squeue_jobs,
                          "squeue -o"), ("parse_squeue_tres", parse_squeue_tres, "squeue -O"),
                          ("parse_sinfo", parse_sinfo_nodes, "sinfo")):
        text = outputs[key]
        out[name], _ = _best(lambda fn=fn, text=text: fn(text), repeat)  # type: ignore[misc]
    return out


def read_once(outputs: Mapping[str, str], clock: float | None = None) -> tuple[Snapshot, ReadInfo]:
    """One read of ``outputs``; ``clock``: the time the read says it ran (default: now)."""
    reader = SlurmReader(CannedRunner(outputs), wall=time.time if clock is None else lambda: clock)
    snap = reader.read()
    assert reader.last is not None
    return snap, reader.last


def _applied(decision_updates: Sequence[JobUpdate]) -> ApplyResult:
    return ApplyResult(tuple(JobResult(u.job_id, UpdateStatus.APPLIED) for u in decision_updates))


@dataclass
class Daemon:
    """The decision core as the daemon keeps it between cycles."""

    policy: Policy
    config: PlannerConfig
    applier: Applier = field(default_factory=Applier)
    state: DaemonState = field(default_factory=DaemonState)
    memory: PlannerMemory = field(default_factory=PlannerMemory)

    def __post_init__(self) -> None:
        self.memory.demoted_since = self.state.demoted_since

    def planner(self, snap: Snapshot) -> Plan:
        return plan(snap, self.policy, self.config, self.memory)

    def step(self, snap: Snapshot, info: ReadInfo, max_updates: int = MAX_UPDATES_DEFAULT) -> Step:
        return steer(self.applier, self.state, snap, self.planner, site_unknown=info.site_factor_unknown,
                     max_updates=max_updates)

    def fork(self) -> Daemon:
        """A copy whose state and memory a timed step may change freely."""
        state = copy.deepcopy(self.state)
        mem = PlannerMemory(state.demoted_since, dict(self.memory.last_base), self.memory.gap)
        return Daemon(self.policy, self.config, self.applier, state, mem)


class _Cluster:
    """``FakeSlurm`` as the cycle's ``Cluster``: read through the real reader, every update lands, no run
    history (a policy that wants one is fed it by ``make_policy_for``)."""

    def __init__(self, slurm: FakeSlurm) -> None:
        self.slurm = slurm
        self.last: ReadInfo | None = None
        self.sent = 0

    def read(self) -> Snapshot:
        snap, self.last = read_once(self.slurm.outputs(), self.slurm.clock)
        return snap

    def confirm(self, job_ids: Collection[str]) -> dict[str, Fate]:
        return {j: Fate("unknown") for j in job_ids}  # no word either way: the records stay

    def apply(self, snapshot: Snapshot, updates: Iterable[JobUpdate], **_: Any) -> ApplyResult:
        sent = list(updates)
        self.slurm.apply(sent)
        self.sent += len(sent)
        return _applied(sent)

    def finished_runs(self, rewind: bool = False) -> FinishedRuns | None:
        return None


def run_cycles(slurm: FakeSlurm, daemon: Daemon, cycles: int, interval: float = 10.0,
               max_updates: int = MAX_UPDATES_DEFAULT) -> list[int]:
    """``cycles`` daemon cycles (``core.cycle.run_cycle``) against ``slurm``; the jobs written each cycle."""
    cluster = _Cluster(slurm)
    core = Core(daemon.applier, daemon.state, max_updates)
    written: list[int] = []
    for _ in range(cycles):
        cluster.sent = 0
        run_cycle(cluster, core, daemon.policy, daemon.planner, Strict(), now=lambda: slurm.clock)
        written.append(cluster.sent)
        slurm.advance(interval)
    return written


def time_decide(slurm: FakeSlurm, daemon: Daemon, repeat: int = 3) -> dict[str, float]:
    """Seconds of one ``plan`` and of one ``steer`` (reconcile + plan + decide) on ``slurm``'s state."""
    snap, info = read_once(slurm.outputs(), slurm.clock)
    plan_s = math.inf
    for d in [daemon.fork() for _ in range(max(1, repeat))]:
        t0 = time.perf_counter()
        d.planner(snap)
        plan_s = min(plan_s, time.perf_counter() - t0)

    forks = [daemon.fork() for _ in range(max(1, repeat))]
    best = math.inf
    step: Step | None = None
    for d in forks:  # the copies are made before the clock starts
        t0 = time.perf_counter()
        step = d.step(snap, info)
        best = min(best, time.perf_counter() - t0)
    assert step is not None
    return {"plan": plan_s, "steer": best, "planned": len(step.plan.entries),
            "updates": len(step.decision.updates()), "deferred": step.decision.deferred}


def make_policy_for(name: str, slurm: FakeSlurm) -> Policy:
    """A heuristic by name (``sjf``...) or a model directory (``models/testbed-multifactor``), fed the
    generated history when it reads one."""
    if "/" in name:
        from rltune_daemon.policies.learned import load_learned

        policy: Policy = load_learned(name)
    else:
        from rltune_daemon.policies.registry import make_policy

        policy = make_policy(name)
    if policy.learns_history:
        policy.learn_runs(slurm.history())
    return policy


def bench_decide_read(n_pending: int = 10_000,
                      policies: Sequence[str] = ("sjf", "models/testbed-multifactor"), *, nodes: int = 0,
                      seed: int = 0, repeat: int = 3, warm_cycles: int = 4,
                      config: PlannerConfig | None = None) -> dict[str, Any]:
    """The read and, per policy, the decision timed at ``n_pending`` pending jobs (see module docstring):
    ``warm_cycles`` cycles (no write cap) bring the daemon to its steady state before the timing."""
    try:
        import torch

        torch.set_num_threads(1)  # the daemon's setting: one core for the decision
    except ModuleNotFoundError:
        pass
    slurm = FakeSlurm.generate(n_pending, nodes=nodes, seed=seed)
    outputs = slurm.outputs()
    result: dict[str, Any] = {
        "pending": n_pending, "nodes": len(slurm.nodes), "seed": seed, "repeat": repeat,
        "output_bytes": {k: len(v) for k, v in outputs.items()},
        "read": {k: round(v, 4) for k, v in time_read(outputs, repeat, slurm.clock).items()},
        "decide": {},
    }
    for name in policies:
        fake = copy.deepcopy(slurm)
        daemon = Daemon(make_policy_for(name, fake), config or PlannerConfig())
        written = run_cycles(fake, daemon, warm_cycles, max_updates=10**9)
        timed = time_decide(fake, daemon, repeat)
        result["decide"][name] = {"warm_writes": written,
                                  **{k: round(v, 4) if isinstance(v, float) else v for k, v in timed.items()}}
    return result


__all__ = ["CannedRunner", "Daemon", "FakeSlurm", "bench_decide_read", "run_cycles", "time_decide",
           "time_read"]
