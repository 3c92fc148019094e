"""``rltune-daemon --check-config --probe``: the read side of one cycle against the configured Slurm,
writing nothing, so an admin learns before the first live cycle that every command works.

It runs exactly what a cycle reads (``scontrol ping``, ``sprio``, both ``squeue`` calls, ``sinfo``, with
the configured partitions and the integrity checks), the confirmation ``squeue -t all -j`` and, for a
history-based policy, ``sacct``; it reads ``scontrol show config`` for the Slurm release and what it
implies (``slurm.release``: rate limit, priority plugin, metrics, pyslurm) and says whether the
daemon's user may write (root, SlurmUser or an Operator). Each line says what ran, what it found and
how long it took; the first failure names the command and what to do.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable
from dataclasses import dataclass

from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.config import DaemonConfig
from rltune_daemon.slurm.errors import SlurmError
from rltune_daemon.slurm.history import sacct_history_argv


@dataclass
class Step:
    what: str
    ok: bool
    detail: str
    seconds: float


def _step(what: str, fn: Callable[[], str]) -> Step:
    t0 = time.monotonic()
    try:
        detail = fn()
    except SlurmError as err:
        return Step(what, False, str(err), time.monotonic() - t0)
    return Step(what, True, detail, time.monotonic() - t0)


def _user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def run_probe(cfg: DaemonConfig, history: bool) -> list[Step]:
    """The probe's steps, in the order a cycle runs them (see module docstring)."""
    backend = SlurmBackend(cfg)
    runner, reader = backend.runner, backend.reader
    steps: list[Step] = []

    def read() -> str:
        snap = reader.read()
        info = reader.last
        bad = info.unparsed if info is not None else frozenset()
        unparsed = f", {len(bad)} record(s) not parsed" if bad else ""
        parts = f" in partition(s) {', '.join(cfg.slurm.partitions)}" if cfg.slurm.partitions else ""
        return (f"{len(snap.pending)} pending, {len(snap.running)} running, {len(snap.nodes)} node(s){parts}"
                f"{unparsed}; {runner.calls_this_cycle} calls")

    steps.append(_step("read (scontrol ping, sprio, squeue -o, squeue -O, sinfo)", read))
    if not steps[-1].ok:
        return steps

    def confirm() -> str:
        info = reader.last
        some = sorted(info.queue)[:1] if info is not None else []
        ids = [j for j, _ in some] or ["1"]
        fates = reader.confirm(ids, single=False)
        return f"squeue -t all -j {ids[0]}: {next(iter(fates.values())).kind}"

    steps.append(_step("confirm (what became of jobs a read did not list)", confirm))

    def config() -> str:
        release = backend.detect()
        return "; ".join(release.implications())

    steps.append(_step("scontrol show config (release and what it implies)", config))
    if history:
        def sacct() -> str:
            runner.begin_cycle()
            out = runner.run(sacct_history_argv(time.time() - 86400.0)).stdout
            return f"{max(len(out.splitlines()) - 1, 0)} job(s) ended in the last day"

        steps.append(_step("sacct (finished runs for the history-based policy)", sacct))

    def rights() -> str:
        user = _user()
        if os.geteuid() == 0:
            return f"{user}: root may update jobs"
        release = backend.release or backend.detect()
        if release.rate_limit.exempt:  # not root, so SlurmUser (compared by uid in scontrol show config)
            return f"{user}: SlurmUser may update jobs"
        runner.begin_cycle()
        res = runner.run(["sacctmgr", "-n", "-P", "show", "user", user, "format=AdminLevel"], check=False)
        level = res.stdout.strip().splitlines()[0] if res.rc == 0 and res.stdout.strip() else ""
        if level.lower() in ("operator", "administrator"):
            return f"{user}: AdminLevel={level} may update jobs"
        raise SlurmError(f"{user} is not root, SlurmUser or a Slurm Operator (AdminLevel "
                         f"{level or 'unknown: sacctmgr did not answer'}): live cycles would be refused; "
                         f"run: sacctmgr -i modify user {user} set AdminLevel=Operator")

    steps.append(_step("write rights (nothing is written)", rights))
    return steps


def print_probe(steps: list[Step]) -> int:
    for s in steps:
        print(f"probe {'ok  ' if s.ok else 'FAIL'} {s.what}: {s.detail} ({s.seconds * 1000:.0f} ms)")
    failed = [s for s in steps if not s.ok]
    print("probe OK: every command a cycle runs works (nothing was written)" if not failed
          else f"probe FAILED: {failed[0].what}")
    return 1 if failed else 0
