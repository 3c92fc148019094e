"""``make demo``: the daemon on a real (local) Slurm in about a minute, or on the simulator without one.

With root and the Slurm packages: start the project's local cluster (the paper's testbed shape), fill
every GPU with short blocker jobs, submit a slice of the testbed workload (varied GPU counts, types and
time limits; short sleeps) so it queues, show ``rltune-daemon --dry-run``, run live cycles and show
what changed in Slurm's own view (``sprio`` SITE column, ``squeue`` order, start order), then
``rltune-daemon --restore`` and stop the cluster. Without root or Slurm: the same daemon loop on the
simulated Slurm (``--backend sim``) over the bundled trace, and why.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rltune_daemon.cli.daemon import make_backend
from rltune_daemon.domain import Job
from rltune_daemon.errors import UserError
from rltune_daemon.policies.registry import DAEMON_DEFAULT
from rltune_daemon.service.config import load_config
from rltune_daemon.service.logging import configure, get_logger
from rltune_daemon.service.loop import Daemon, sim_summary_text
from rltune_daemon.service.statefile import StateFile
from rltune_daemon.slurm.localcluster import LocalCluster, slurm_installed
from rltune_daemon.traces import load_workload

USER = "rltuser"
SLEEP_RANGE = (15, 45)  # seconds each demo job really runs
BLOCKER_SECONDS = 25
JOBS = 12
# The default (multifactor) writes nothing, so the demo shows the one reordering an admin may switch on.
DEMO_POLICY = "sjf"
DEFAULT_TEXT = (f'base_policy = "{DEMO_POLICY}": {DEMO_POLICY} within each job-size class, every class '
                "in the places Slurm's own order gives it (with no configuration the daemon runs "
                f"{DAEMON_DEFAULT} and writes nothing: no reordering measured so far spares every class "
                "on every workload)")


def say(text: str = "") -> None:
    print(text, flush=True)


def step(title: str) -> None:
    say()
    say(f"=== {title} " + "=" * max(0, 86 - len(title)))


class Demo:
    """One run of the live demo on a private local cluster."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.cluster = LocalCluster.private(work / "slurm", message_timeout=3, test_user=USER, timeout=180)
        self.env = self.cluster.env()
        self.config = work / "rltune-daemon.toml"
        self.names: dict[str, str] = {}
        self.blockers_started = time.monotonic()

    # ---- Slurm helpers ---------------------------------------------------------------------------

    def run(self, *argv: str, user: str | None = None, check: bool = True) -> str:
        cmd = list(argv)
        if user:
            cmd = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={self.cluster.conf}", *cmd]
        proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=60, check=False,
                              cwd="/tmp")
        if check and proc.returncode != 0:
            raise UserError(f"{' '.join(argv[:2])} failed: {proc.stderr.strip()}")
        return proc.stdout

    def sbatch(self, name: str, args: Sequence[str], seconds: int, user: str | None = None) -> str:
        out = self.run("sbatch", "--parsable", "-J", name, "-o", "/dev/null", "-D", "/tmp", *args,
                       "--wrap", f"sleep {seconds}", user=user)
        job_id = out.strip().split(";")[0]
        self.names[job_id] = name
        return job_id

    def sprio(self) -> dict[str, tuple[int, int]]:
        rows = {}
        for ln in self.run("sprio", "-h", "-o", "%i|%Y|%S", check=False).splitlines():
            i, p, s = ln.split("|")
            rows[i.strip()] = (int(p), int(s))
        return rows

    def pending_order(self) -> list[str]:
        """Pending jobs in Slurm's own priority order."""
        out = self.run("squeue", "-h", "-t", "PD", "-S", "-p,i", "-o", "%A")
        return [ln.strip() for ln in out.splitlines() if ln.strip()]

    def started(self) -> list[tuple[str, str, str]]:
        out = self.run("squeue", "-h", "-t", "R", "-o", "%A|%S|%N")
        rows = [(a, b, c) for a, b, c in (ln.split("|") for ln in out.splitlines() if ln.count("|") == 2)]
        return sorted((r for r in rows if r[0] in self.names and not self.names[r[0]].startswith("blocker")),
                      key=lambda r: (r[1], int(r[0])))

    def view(self, title: str, ids: Sequence[str]) -> None:
        prio = self.sprio()
        say(f"{title}")
        say(f"  {'pos':>3}  {'job':>4}  {'name':<28} {'PRIORITY':>8} {'SITE':>6}")
        for k, j in enumerate(ids, 1):
            p, s = prio.get(j, (0, 0))
            say(f"  {k:>3}  {j:>4}  {self.names.get(j, '?'):<28} {p:>8} {s:>6}")

    def daemon(self, *args: str) -> tuple[int, str, list[dict[str, Any]]]:
        proc = subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", "--config", str(self.config),
                               *args], capture_output=True, text=True, timeout=120, check=False,
                              env={**os.environ, "SLURM_CONF": str(self.cluster.conf)})
        events = [json.loads(ln) for ln in proc.stderr.splitlines() if ln.startswith("{")]
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error")]
        for e in errors:
            say(f"  {e}")
        return proc.returncode, proc.stdout, events

    # ---- the story --------------------------------------------------------------------------------

    def workload(self) -> list[Job]:
        """A slice of the testbed trace: the first jobs of up to 4 GPUs plus one two-node job."""
        jobs = [j for j in load_workload("testbed").jobs[:300] if j.gpus <= 4][: JOBS - 1]
        multi = [j for j in load_workload("testbed").jobs[:300] if j.gpus == 8][:1]
        return jobs + multi

    def submit(self) -> list[str]:
        layout = {"p100-1": ("p100", 4), "p100-2": ("p100", 4), "k80-1": ("k80", 2), "k80-2": ("k80", 2),
                  "m40-1": ("m40", 1)}
        blockers = [self.sbatch(f"blocker-{node}", ["-w", node, f"--gres=gpu:{gtype}:{gpus}", "-t", "5"],
                                BLOCKER_SECONDS) for node, (gtype, gpus) in layout.items()]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and set(self.pending_order()) & set(blockers):
            time.sleep(0.2)
        self.blockers_started = time.monotonic()
        rng = random.Random(7)
        ids = []
        for k, job in enumerate(self.workload()):
            per_node = job.gpus // job.nodes if job.nodes else job.gpus
            gtype = f"{job.gpu_types[0]}:" if job.gpu_types else ""
            args = [f"--gres=gpu:{gtype}{per_node}", "-t", str(max(int(job.time_limit // 60), 1))]
            if job.nodes:
                args += ["-N", str(job.nodes)]
            kind = job.gpu_types[0] if job.gpu_types else "gpu"
            name = f"{job.id} {job.gpus}x{kind} {job.time_limit / 60:.0f}m"
            ids.append(self.sbatch(name, args, rng.randint(*SLEEP_RANGE), user=USER if k % 3 == 1 else None))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not set(ids) <= set(self.sprio()):
            time.sleep(0.2)
        return ids

    def write_config(self) -> None:
        """The daemon's defaults but the policy: where this cluster is, where to keep state, a 5-s cycle."""
        self.config.write_text(
            f'interval = 5\nbase_policy = "{DEMO_POLICY}"\nstate_file = "{self.work / "state.db"}"\n'
            f'[slurm]\nconf = "{self.cluster.conf}"\n[metrics]\nenabled = false\n[log]\nlevel = "info"\n'
        )

    def main(self) -> int:
        step("1. start the local Slurm cluster (testbed: 2x4 P100, 2x2 K80, 1x1 M40)")
        t0 = time.monotonic()
        self.cluster.start()
        try:
            say(f"  slurmctld + 5 slurmd up in {time.monotonic() - t0:.1f} s "
                f"(SLURM_CONF={self.cluster.conf})")
            return self._story()
        finally:
            step("7. stop the cluster")
            self.cluster.stop(purge=True)
            say("  done")

    def _story(self) -> int:
        step("2. fill every GPU with blockers, then submit a slice of the testbed workload")
        ids = self.submit()
        say(f"  {len(ids)} jobs pending behind blockers that end in {BLOCKER_SECONDS} s "
            f"(asked times from the trace, real runtime {SLEEP_RANGE[0]}-{SLEEP_RANGE[1]} s)")
        slurm_order = self.pending_order()
        self.view("  Slurm's own order (multifactor, SITE = SiteFactor):", slurm_order)

        step("3. rltune-daemon --dry-run --once  (what it would change; writes nothing)")
        self.write_config()
        say(f"  policy: {DEFAULT_TEXT}")
        rc, out, events = self.daemon("--dry-run", "--once")
        say("\n".join("  " + ln for ln in out.splitlines()))
        cyc = next((e for e in events if e.get("event") == "cycle"), {})
        say(f"  -> rc={rc}, {cyc.get('slurm_calls')} Slurm calls (reads only), "
            f"{1000 * cyc.get('seconds', 0):.0f} ms; SITE column unchanged: "
            f"{all(s == 0 for _, s in self.sprio().values())}")

        step("4. live: rltune-daemon --once (one cycle; the state file records every change)")
        rc, _, events = self.daemon("--once")
        cyc = next((e for e in events if e.get("event") == "cycle"), {})
        say(f"  cycle: {cyc.get('changed')} jobs changed, {cyc.get('priority_updates')} SiteFactor updates, "
            f"{cyc.get('hints_set')} hints, {cyc.get('slurm_calls')} Slurm calls, "
            f"{1000 * cyc.get('seconds', 0):.0f} ms (rc={rc})")
        new_order = self.pending_order()
        self.view("  Slurm's order now (sprio: SITE column set by the daemon):", new_order)
        moved = sum(a != b for a, b in zip(slurm_order, new_order, strict=False))
        say(f"  {moved} of {len(new_order)} positions changed; Slurm computes the order itself from "
            "multifactor + SiteFactor")

        step(f"5. blockers end after {BLOCKER_SECONDS} s: jobs start in the new order (two more live cycles)")
        deadline = self.blockers_started + BLOCKER_SECONDS + 8
        cycles = 0
        while time.monotonic() < deadline:
            time.sleep(3)
            if cycles < 2 and time.monotonic() > deadline - 6:
                self.daemon("--once")
                cycles += 1
        while cycles < 2:
            self.daemon("--once")
            cycles += 1
        started = self.started()
        say("  started so far (start time, node):")
        for j, when, node in started:
            was = slurm_order.index(j) + 1 if j in slurm_order else 0
            say(f"    job {j:>4} {self.names[j]:<28} {when[11:]:>8} on {node:<14} "
                f"(Slurm's own rank was {was})")
        waiting = [(slurm_order.index(j) + 1, j) for j in self.pending_order() if j in slurm_order]
        listed = ", ".join(f"job {j} {self.names[j].split()[1]} (rank {r})" for r, j in sorted(waiting))
        say(f"  still pending (Slurm alone would have started these by rank): {listed or 'none'}")

        step("6. rltune-daemon --restore (every SiteFactor / node list back to its original)")
        rc, out, _ = self.daemon("--restore")
        say("  " + out.strip())
        left = {j: self.sprio().get(j, (0, 0))[1] for j in self.pending_order()}
        say(f"  pending jobs' SITE now: {sorted(set(left.values())) or '(none pending)'}; rc={rc}")
        rc2, out2, _ = self.daemon("--restore")
        say(f"  again (idempotent): {out2.strip()} (rc={rc2})")
        return 0


def sim_demo(reason: str) -> int:
    """The daemon loop on the simulated Slurm: one dry-run table, then the full bundled trace."""
    step("rltune-daemon demo on the simulator (--backend sim)")
    say(f"  no live cluster: {reason}")
    say("  (as root with the Debian Slurm packages, `make demo` runs this on a real local Slurm)")
    say(f"  policy: {DEFAULT_TEXT}")
    cfg = load_config(None, backend="sim", dry_run=True, base_policy=DEMO_POLICY,
                      sim={"speedup": 0, "workload": "testbed"},
                      metrics={"enabled": False})
    configure("warning", "console")
    backend = make_backend(cfg)
    daemon = Daemon(cfg, backend, state_file=StateFile(None), log=get_logger())
    step("a dry-run table at the first busy moment of the trace")
    quiet = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    daemon.out = quiet
    while len(backend.read().pending) < 6 and not backend.done():
        daemon.cycle()
        backend.tick(cfg.interval)
    daemon.out = sys.stdout
    daemon.cycle()
    quiet.close()
    step("live: the same loop over the whole trace (1,024 jobs, simulated clock)")
    daemon.dry_run = False
    t0 = time.monotonic()
    while not backend.done():
        daemon.cycle()
        backend.tick(cfg.interval)
    say(f"  {daemon.cycle_no} cycles in {time.monotonic() - t0:.1f} s")
    say("  " + sim_summary_text(_flat(backend.summary())).replace("\n", "\n  "))
    return 0


def _flat(summary: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in summary.items():
        if isinstance(v, dict):
            out.update({f"{k}_{k2}": v2 for k2, v2 in v.items()})
        else:
            out[k] = v
    return out


def main() -> int:
    if os.geteuid() != 0:
        return sim_demo("not running as root (the local Slurm cluster starts slurmctld/slurmd)")
    if not slurm_installed():
        return sim_demo("the Slurm packages are missing "
                        "(make setup installs slurmctld slurmd slurm-client munge)")
    if shutil.which("runuser") is None:
        return sim_demo("runuser is missing")
    work = Path(tempfile.mkdtemp(prefix="rltune-demo-"))
    work.chmod(0o755)  # munged runs as `munge` and must reach its socket/log inside
    try:
        return Demo(work).main()
    except UserError as err:
        say(f"live demo failed: {err}")
        return sim_demo(str(err))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
