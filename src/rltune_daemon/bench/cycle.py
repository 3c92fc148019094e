"""``rltune bench cycle``: what one daemon cycle costs on a real Slurm, stage by stage, at several queue
lengths, and what it costs a user's ``sbatch`` meanwhile.

For each policy and each pending count ``N`` (root and the Debian Slurm packages; the project's private
5-node local Slurm): every GPU held by a blocker job (as in ``bench soak``: the contended state the
daemon exists for), ``N`` pending 1-4 GPU jobs, a few seconds for slurmctld's first passes over them,
a user's ``sbatch`` timed from a separate process for ``--baseline`` seconds, then the daemon's own
``Daemon.cycle()`` (in this process, the shipped config with the cluster's slurm.conf and a state file
on disk) every ``--interval`` seconds while that user keeps submitting.

Every cycle is split by the spans the daemon records (``rltune_daemon.spans``), not by wrapping its code:

* Slurm commands: each one's kind, seconds and update lines, with the stage of the cycle it ran in:
  ``read`` (ping, sprio, squeue -o, squeue -O, sinfo, plus a confirming squeue when the queue shrank a
  lot, and the recorded jobs the read did not list), ``history`` (sacct, for models that read run
  history) and ``write`` (one scontrol per batch, after a ping only when slurmctld last answered more
  than 2 s before);
* stages: Slurm read (the read's command seconds), snapshot (the rest of the read stage: parsing,
  integrity checks, building the Snapshot), history, features and actor (the learned policy's own
  spans), MILP (the placer inside ``CountingPlacer``), planner rest (ranking, starvation guard,
  SiteFactor targets, the applier's decision), Slurm write (write command seconds), write pacing
  (``write_rate`` sleeps between batches) and state file (the save stage: write-ahead and after);
* updates: scontrol lines sent, jobs applied, fields by kind (SiteFactor, node-list set/clear);
* why it wrote (``plan_churn``): how far the plan order moved, whether the last order still held in
  Slurm's priorities, how many jobs were re-targeted and how many multifactor bases moved unevenly.

A cycle is *first* (cycle 1: nothing of the daemon's is in Slurm yet), *filling* (later cycles while
``max_updates_per_cycle`` still defers updates), or *steady* (after a cycle that deferred nothing: only
what changed since is written). The bench runs until ``--steady`` steady cycles, or gives up after
enough cycles to write every job once plus ``--steady`` + 5 (a queue that never settles is reported
as such). The user's held jobs are cancelled between cycles, so the daemon sees ``N`` pending jobs plus
at most one interval's worth of them. Timings are benchmarks, never test assertions.
"""

from __future__ import annotations

import argparse
import bisect
import datetime
import itertools
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rltune_daemon import spans as spans_of_cycle
from rltune_daemon.bench.load import NODE_GPUS, UserSbatch, fill_queue, split_latency
from rltune_daemon.bench.load import latency_stats as soak_latency_stats
from rltune_daemon.cli.common import machine, print_json
from rltune_daemon.domain.updates import ApplyResult
from rltune_daemon.errors import UserError
from rltune_daemon.planner.priorities import realizes
from rltune_daemon.policies.registry import make_policy
from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.config import INTERVAL_MIN, SlurmSection, load_config
from rltune_daemon.service.logging import configure, get_logger
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.statefile import StateFile
from rltune_daemon.signals import sigterm_interrupts
from rltune_daemon.slurm.localcluster import LocalCluster, slurm_installed
from rltune_daemon.spans import Span

DEFAULT_PENDING = "128,1024,10000"
DEFAULT_POLICIES = "rltune:models/testbed-multifactor,daemon:sjf"
STAGES = ("slurm_read", "snapshot", "history", "features", "actor", "milp", "plan_rest", "slurm_write",
          "write_pacing", "state_file")
UPDATE_KINDS = ("SiteFactor", "ExcNodeList", "ExcNodeList clear", "ReqNodeList", "ReqNodeList clear",
                "OverSubscribe")
LATENCY_NAME = "latency"


# ---- pure parts -----------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    """``--pending``: comma-separated positive job counts."""
    try:
        sizes = [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--pending {text!r}: expected comma-separated job counts, e.g. "
                        f"{DEFAULT_PENDING}") from None
    if not sizes or min(sizes) < 1:
        raise UserError("--pending: give at least one positive job count")
    return sizes


@dataclass(frozen=True)
class PolicySpec:
    """What the daemon runs: a model directory (``rltune:DIR``) or a base policy alone (``daemon:NAME``)."""

    label: str
    model: str
    base_policy: str


def parse_policies(text: str) -> list[PolicySpec]:
    """``--policies``: ``rltune:DIR`` (the daemon with that model) or ``daemon:NAME`` (no model, that base
    policy), comma-separated, as ``rltune evaluate`` names them."""
    out: list[PolicySpec] = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        kind, sep, value = item.partition(":")
        if not sep or not value or kind not in ("rltune", "daemon"):
            raise UserError(f"--policies: {item!r} is not rltune:MODEL_DIR or daemon:POLICY")
        if kind == "rltune":
            if not (Path(value) / "manifest.json").is_file():
                raise UserError(f"--policies: {value} is not a model directory (no manifest.json)")
            out.append(PolicySpec(item, value, "multifactor"))
        else:
            try:
                make_policy(value)
            except (KeyError, ValueError, UserError):
                raise UserError(f"--policies: unknown base policy {value!r} in {item!r}") from None
            out.append(PolicySpec(item, "", value))
    if not out:
        raise UserError("--policies: give at least one policy")
    return out


def update_kinds(lines: Sequence[str]) -> Counter[str]:
    """Fields in scontrol update lines (``update JobId=N SiteFactor=5 ExcNodeList=``), by kind; an empty
    node list is a clear."""
    out: Counter[str] = Counter()
    for line in lines:
        for token in line.split()[2:]:
            key, _, value = token.partition("=")
            out[f"{key} clear" if key.endswith("NodeList") and not value else key] += 1
    return out


def phase_of(cycle: int, deferred_before: Sequence[int]) -> str:
    """``first`` for cycle 1, ``steady`` once an earlier cycle deferred nothing (every planned update in
    Slurm), else ``filling``. ``deferred_before``: the deferred counts of the cycles before this one."""
    if cycle == 1:
        return "first"
    return "steady" if any(d == 0 for d in deferred_before) else "filling"


def min_moves(before: Sequence[str], after: Sequence[str]) -> int:
    """Fewest jobs that must move for ``before``'s order (of the jobs in both) to become ``after``'s:
    the jobs outside a longest common subsequence. A job outside it needs a new SiteFactor; with room
    between its new neighbours' priorities, no other job would."""
    pos = {j: k for k, j in enumerate(before)}
    seq = [pos[j] for j in after if j in pos]
    tails: list[int] = []  # longest increasing subsequence of the old positions, patience sorting
    for x in seq:
        k = bisect.bisect_left(tails, x)
        if k == len(tails):
            tails.append(x)
        else:
            tails[k] = x
    return len(seq) - len(tails)


def plan_churn(prev_order: Sequence[str], plan: Any, snap: Any, prev_base: Mapping[str, int]
               ) -> dict[str, Any]:
    """Why a cycle writes what it writes: how far the plan order moved since the last cycle
    (``min_moves``), whether the last cycle's order still held in Slurm's priorities when this cycle
    read them (``order_held``: else the multifactor base drifted under the SiteFactors), how many
    planned jobs got a target priority other than their current one (the planner re-targets a whole
    tier when the current priorities do not give its order), and how many bases changed by other than
    the most common change (multifactor's age factor grows per job, in integer steps)."""
    state = {j.id: st for j, st in zip(snap.pending, snap.pending_state, strict=True)}
    submit = {j.id: j.submit for j in snap.pending}
    order = [e.job_id for e in plan.entries]
    kept = [j for j in prev_order if j in state and not state[j].held]
    # as the planner asks it (Slurm breaks equal priorities by submit time), over all tiers at once
    order_held = realizes(np.array([state[j].priority for j in kept], dtype=np.int64),
                          np.array([submit[j] for j in kept], dtype=np.float64))
    base = {j: st.priority - st.site_factor for j, st in state.items()}
    deltas = Counter(base[j] - prev_base[j] for j in base if j in prev_base)
    common = deltas.most_common(1)[0][1] if deltas else 0
    return {"plan_jobs": len(order), "plan_min_moves": min_moves(prev_order, order) if prev_order else None,
            "prev_order_held": order_held if prev_order else None,
            "retargeted": sum(1 for e in plan.entries if e.target_priority != e.current_priority),
            "base_changed_unevenly": sum(deltas.values()) - common}


def latency_stats(values: Sequence[float]) -> dict[str, float]:
    """n, p50, p95 and max of ``sbatch`` seconds, in ms (empty: {})."""
    return soak_latency_stats(values, median_key="p50_ms")




def summarise(rows: Sequence[Mapping[str, Any]], tail: int = 5) -> dict[str, Any]:
    """The first cycle and the median steady cycle (each stage, command and update count a median on
    its own) of one run's cycle rows. A run that never reached a steady state (every cycle still
    deferred updates) gets the median of its last ``tail`` cycles instead (``unsettled_median``): what
    the daemon costs while it keeps rewriting."""
    out: dict[str, Any] = {}
    first = [r for r in rows if r["phase"] == "first"]
    steady = [r for r in rows if r["phase"] == "steady" and not r["errors"]]
    if first:
        out["first"] = _pick(first[0])
    if steady:
        out["steady_median"] = _medians(steady)
    else:
        late = [r for r in rows[1:] if not r["errors"]][-tail:]
        if late:
            out["unsettled_median"] = _medians(late)
    out["filling_cycles"] = sum(1 for r in rows if r["phase"] == "filling")
    return out


def _medians(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    med: dict[str, Any] = {k: _median([r[k] for r in rows if r.get(k) is not None])
                           for k in _numeric(rows[-1])}
    med["stages_s"] = {s: _median([r["stages_s"][s] for r in rows]) for s in STAGES}
    med["updates_by_kind"] = {k: _median([r["updates_by_kind"].get(k, 0) for r in rows])
                              for k in UPDATE_KINDS}
    cmd_keys = sorted({k for r in rows for k in r["commands_by_kind"]})
    med["commands_by_kind"] = {k: _median([r["commands_by_kind"].get(k, 0) for r in rows])
                               for k in cmd_keys}
    med["cycles"] = len(rows)
    med["max_total_s"] = max(r["total_s"] for r in rows)
    med["max_commands"] = max(r["commands"] for r in rows)
    return med


def _numeric(row: Mapping[str, Any]) -> list[str]:
    return [k for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool)
            and k != "cycle"]


def _pick(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("phase",)}


def _median(values: Sequence[float]) -> float:
    return round(float(statistics.median(values)), 4) if values else 0.0


def reader_label(reader: str) -> str:
    """What a run's name gains when it times a reader other than the default CLI one."""
    return f" ({reader} reader)" if reader != "cli" else ""


def results_md(result: Mapping[str, Any]) -> str:
    """A short Markdown report: per policy and size, first vs steady cycle."""
    lines = [f"# `rltune bench cycle` (started {result.get('date', '')})", "",
             f"Command: `{result['command']}`", "",
             f"Machine: {result.get('cpus')} CPUs, Python {result.get('python')}; local Slurm "
             f"(5 nodes, 13 fake GPUs, every GPU held by a blocker job); cycles every "
             f"{result['interval']:g} s; `[slurm]` write_batch {result['write_batch']}, write_rate "
             f"{result['write_rate']:g}/s, max_updates_per_cycle {result['max_updates_per_cycle']}.", "",
             "Stages in seconds; commands read/write (read: ping, sprio, squeue -o, squeue -O, sinfo, "
             "plus confirm and sacct when they run; write: one scontrol per batch of updates, plus a ping "
             "when slurmctld last answered more than 2 s before); updates = jobs written; "
             "sbatch = a user's sbatch, p50/p95 in ms.", ""]
    head = ("| policy | pending | cycle | total | read | snapshot | history | features | actor | MILP | "
            "plan rest | write | pacing | state | cmds read/write | updates | sbatch in cycles | "
            "sbatch between |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for run in result["runs"]:
        s = run["summary"]
        late = s.get("unsettled_median", {}).get("cycles", 0)
        for which, label in (("first", "first"), ("steady_median", "steady (median)"),
                             ("unsettled_median", f"never steady: last {late} (median)")):
            r = s.get(which)
            if not r:
                continue
            st = r["stages_s"]
            lat = run["sbatch"].get("first_cycle" if which == "first" else "steady_inside", {})
            between = run["sbatch"].get("steady_between", {}) if which != "first" else {}
            if which == "unsettled_median":  # no steady cycles: the user's sbatch over all cycles
                lat, between = run["sbatch"].get("all_inside", {}), run["sbatch"].get("all_between", {})
            policy = run["policy"] + reader_label(run.get("reader", "cli"))
            lines.append(
                f"| {policy} | {run['pending']:,} | {label} | {r['total_s']:.3f} | "
                + " | ".join(f"{st[k]:.3f}" for k in STAGES)
                + f" | {r['commands_read']:g}/{r['commands_write']:g} | {r['jobs_updated']:g} | "
                f"{_lat(lat)} | {_lat(between)} |")
    lines += ["", "sbatch before the daemon started, p50/p95 ms: " + ", ".join(
        f"{run['policy']} {run['pending']:,}: {_lat(run['sbatch'].get('before', {}))}"
        for run in result["runs"]),
        ""]
    return "\n".join(lines)


def write_results(result: Mapping[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    (out / "results.md").write_text(results_md(result))


def _lat(d: Mapping[str, float]) -> str:
    return f"{d['p50_ms']:g}/{d['p95_ms']:g}" if d else "-"


# ---- one cycle's row, from the spans it recorded ------------------------------------------------------

# the stage a Slurm command ran in, as the table names it
COMMAND_PHASE = {"read": "read", "history": "history", "apply": "write"}


def cycle_row(rep: Any, spans: Sequence[Span], result: ApplyResult | None, phase: str) -> dict[str, Any]:
    """One cycle as a flat row: the daemon's own report plus the split its spans give (``spans``: the
    cycle's stages, each Slurm command, the features, the actor, the MILP)."""
    def total(name: str, parent: str | None = None) -> float:
        return sum(s.seconds for s in spans if s.name == name and (parent is None or s.parent == parent))

    calls = [s for s in spans if s.name == "slurm"]
    read_cmd, write_cmd = total("slurm", "read"), total("slurm", "apply")
    features_s, actor_s, milp_s = total("features"), total("actor"), total("milp")
    stages = {
        "slurm_read": read_cmd,
        "snapshot": max(0.0, total("read") - read_cmd),
        "history": total("history"),
        "features": features_s,
        "actor": actor_s,
        "milp": milp_s,
        "plan_rest": max(0.0, total("plan") - features_s - actor_s - milp_s),
        "slurm_write": write_cmd,
        "write_pacing": max(0.0, total("apply") - write_cmd),
        "state_file": total("save"),
    }

    def kind(s: Span) -> str:
        return f"{COMMAND_PHASE.get(s.parent, s.parent or 'other')}:{s.info.get('kind', '?')}"

    kinds = Counter(kind(s) for s in calls)
    lines = list(result.lines) if result is not None and not result.dry_run else []
    by_field = update_kinds(lines)
    return {
        "cycle": rep.cycle, "phase": phase, "outcome": rep.outcome, "errors": len(rep.errors),
        "error": rep.errors[0] if rep.errors else "",
        "total_s": round(rep.seconds, 4), "read_s": round(rep.read_seconds, 4),
        "plan_s": round(rep.plan_seconds, 4), "apply_s": round(rep.apply_seconds + rep.save_seconds, 4),
        "stages_s": {k: round(v, 4) for k, v in stages.items()},
        "pending_seen": rep.jobs_seen, "running": rep.running,
        "commands": len(calls), "daemon_slurm_calls": rep.slurm_calls,
        "commands_read": sum(1 for s in calls if s.parent in ("read", "history")),
        "commands_write": sum(1 for s in calls if s.parent == "apply"),
        "commands_by_kind": dict(sorted(kinds.items())),
        "command_seconds_by_kind": {k: round(sum(s.seconds for s in calls if kind(s) == k), 4)
                                    for k in sorted(kinds)},
        "scontrol_batches": sum(1 for s in calls if s.info.get("updates")),
        "update_lines": len(lines), "jobs_updated": len(result.applied) if result is not None else 0,
        "changed": rep.changed, "priority_updates": rep.priority_updates, "hints_set": rep.hints_set,
        "hints_cleared": rep.hints_cleared, "deferred": rep.deferred,
        "updates_by_kind": {k: by_field.get(k, 0) for k in UPDATE_KINDS},
    }




# ---- one run: a policy at one queue length ------------------------------------------------------------


def _sh(env: Mapping[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), env=dict(env), capture_output=True, text=True, check=False, cwd="/tmp",
                          timeout=300)


def _wait_queue(env: Mapping[str, str], n: int, timeout: float = 300.0) -> int:
    """Until squeue lists at least ``n`` pending jobs (state-based, never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        out = _sh(env, "squeue", "-h", "-t", "PD", "-o", "%i").stdout
        seen = len(out.split())
        if seen >= n:
            return seen
        time.sleep(1.0)
    raise UserError(f"the local Slurm lists {seen} of {n} pending jobs after {timeout:g} s")


def run_one(spec: PolicySpec, pending: int, args: argparse.Namespace, work: Path,
            say: Callable[[str], None], reader: str = "cli") -> dict[str, Any]:
    name = f"{spec.label} @ {pending}" + reader_label(reader)
    run_dir = work / f"{len(list(work.iterdir()))}"
    run_dir.mkdir()
    run_dir.chmod(0o755)  # munged (its own user) keeps the local cluster's socket and log below it
    cluster = LocalCluster.private(run_dir / "slurm", message_timeout=10, test_user=None,
                                   with_dbd=args.accounting)
    t_start = time.monotonic()
    say(f"{name}: starting the local Slurm" + (" with accounting" if args.accounting else ""))
    env = cluster.env()
    result: dict[str, Any] = {"policy": spec.label, "pending": pending, "reader": reader}
    try:
        cluster.start()  # inside the try: a start that fails half-way still stops what it started
        for node, gres in NODE_GPUS.items():
            res = _sh(env, "sbatch", "-o", "/dev/null", "-w", node, f"--gres=gpu:{gres}", "-t", "600",
                      "--wrap", "sleep 36000")
            if res.returncode != 0:
                raise UserError(f"blocker job on {node} refused: {res.stderr.strip()}")
        t0 = time.monotonic()
        say(f"{name}: submitting {pending} pending jobs")
        fill_queue(pending, env)
        _wait_queue(env, pending)
        result["submit_s"] = round(time.monotonic() - t0, 1)
        settle = min(30.0, 5.0 + pending / 400.0)  # slurmctld's first scheduling passes over the queue
        time.sleep(settle)
        overrides: dict[str, Any] = {
            "model": spec.model, "run_model_behind_base": True,  # the bench times the model it names
            "base_policy": spec.base_policy, "interval": args.interval, "react": 0,
            "state_file": str(run_dir / "state.db"), "slurm": {"conf": str(cluster.conf), "reader": reader},
            "metrics": {"enabled": False}}
        cfg = load_config(None, **overrides)
        configure("error", "json")  # the bench reports each cycle itself; the log's errors still show
        backend = SlurmBackend(cfg)
        daemon = Daemon(cfg, backend, state_file=StateFile(cfg.resolved_state_file()), log=get_logger(),
                        metrics=Metrics(), table=False)
        if daemon.choice.fallback:
            raise UserError(f"{spec.label}: the daemon fell back: {daemon.choice.fallback}")
        backend.detect()  # as the CLI does before its first cycle (outside any cycle)
        rows: list[dict[str, Any]] = []
        spans: list[tuple[float, float]] = []
        cancels: list[tuple[float, float]] = []
        prev_order: list[str] = []
        prev_base: dict[str, int] = {}
        max_cycles = math.ceil(pending / cfg.slurm.max_updates_per_cycle) + args.steady + 5
        with UserSbatch(env, args.every, run_dir / "sbatch.json") as user:
            time.sleep(args.baseline)
            baseline_end = time.monotonic()
            _sh(env, "scancel", "-n", LATENCY_NAME)  # the queue the daemon first sees holds N jobs
            cancels.append((baseline_end, time.monotonic()))
            while len(rows) < max_cycles and sum(r["phase"] == "steady" for r in rows) < args.steady:
                began = time.monotonic()
                with spans_of_cycle.recording() as recorder:
                    rep = daemon.cycle()
                ended = time.monotonic()
                spans.append((began, ended))
                phase = phase_of(rep.cycle, [r["deferred"] for r in rows if not r["errors"]])
                snap = daemon.last_snapshot
                rows.append(cycle_row(rep, recorder.take(), daemon.last_result, phase))
                r = rows[-1]
                if daemon.last_plan is not None and snap is not None and not rep.errors:
                    r.update(plan_churn(prev_order, daemon.last_plan, snap, prev_base))
                    prev_order = [e.job_id for e in daemon.last_plan.entries]
                    prev_base = {j.id: st.priority - st.site_factor
                                 for j, st in zip(snap.pending, snap.pending_state, strict=True)}
                say(f"{name}: cycle {rep.cycle} ({phase}) {r['total_s']:.2f} s: read {r['read_s']:.2f}, "
                    f"plan {r['plan_s']:.2f}, apply {r['apply_s']:.2f}; {r['commands_read']} read + "
                    f"{r['commands_write']} write commands, {r['jobs_updated']} jobs updated, "
                    f"{r['deferred']} deferred" + (f"; ERROR {r['error']}" if r["errors"] else "")
                    + (f"; plan moved >= {r['plan_min_moves']} jobs, last order held in Slurm: "
                       f"{r['prev_order_held']}, {r['retargeted']} re-targeted"
                       if r.get("plan_min_moves") is not None else ""))
                # the user's held jobs are cancelled between cycles so that the queue stays at N
                c0 = time.monotonic()
                _sh(env, "scancel", "-n", LATENCY_NAME)
                cancels.append((c0, time.monotonic()))
                time.sleep(max(0.0, began + args.interval - time.monotonic()))
        samples = user.samples()
        first_span = spans[:1]
        steady_spans = [s for s, r in zip(spans, rows, strict=True) if r["phase"] == "steady"]
        steady_from = steady_spans[0][0] if steady_spans else float("inf")
        steady_samples = [x for x in samples if x[0] >= steady_from]
        result.update({
            "model": spec.model, "base_policy": spec.base_policy, "settle_s": round(settle, 1),
            "cycles": rows, "summary": summarise(rows),
            "sbatch": {
                "before": latency_stats([s for t, s in samples if t < baseline_end]),
                "first_cycle": latency_stats(split_latency(samples, first_span, cancels)["inside"]),
                "steady_inside": latency_stats(split_latency(steady_samples, steady_spans,
                                                             cancels)["inside"]),
                "steady_between": latency_stats(split_latency(steady_samples, steady_spans,
                                                              cancels)["between"]),
                "all_inside": latency_stats(split_latency(samples, spans, cancels)["inside"]),
                "all_between": latency_stats(split_latency(samples, spans, cancels)["between"]),
            },
            "errors": sum(r["errors"] for r in rows),
            # raw, seconds since the daemon's first cycle began, so the split can be recomputed
            "raw": {"sbatch": [(round(t - spans[0][0], 3), round(x, 4)) for t, x in samples] if spans else [],
                    "cycles": [(round(a - spans[0][0], 3), round(b - spans[0][0], 3)) for a, b in spans],
                    "cancels": [(round(a - spans[0][0], 3), round(b - spans[0][0], 3))
                                for a, b in cancels] if spans else []},
        })
    finally:
        cluster.stop(purge=True)
        result["wall_s"] = round(time.monotonic() - t_start, 1)
    return result


def bench_cycle(args: argparse.Namespace) -> int:
    sizes = parse_sizes(args.pending)
    specs = parse_policies(args.policies)
    readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    if not readers or set(readers) - {"cli", "pyslurm"}:
        raise UserError(f"--readers: cli and/or pyslurm, got {args.readers!r}")
    for what, value in (("--interval", args.interval), ("--every", args.every)):
        if value <= 0:
            raise UserError(f"{what} must be positive, got {value:g}")
    if args.interval < INTERVAL_MIN:  # the daemon's own lower bound
        raise UserError(f"--interval must be at least {INTERVAL_MIN:g} s, got {args.interval:g}")
    if args.steady < 1 or args.baseline < 0:
        raise UserError("--steady must be at least 1 and --baseline not negative")
    if os.geteuid() != 0 or not slurm_installed():
        raise UserError("rltune bench cycle needs root and Slurm (make setup): it starts a local Slurm")
    import torch

    torch.set_num_threads(1)  # the daemon's setting: one core for the decision
    work = Path(tempfile.mkdtemp(prefix="rltune-cycle-"))
    work.chmod(0o755)

    def say(text: str) -> None:
        if not args.quiet:
            print(text, file=sys.stderr, flush=True)

    slurm = SlurmSection()
    result: dict[str, Any] = {
        "bench": "cycle", "command": " ".join(["rltune", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "interval": args.interval, "steady_cycles": args.steady, "sbatch_every": args.every,
        "accounting": args.accounting, "write_batch": slurm.write_batch, "write_rate": slurm.write_rate,
        "max_updates_per_cycle": slurm.max_updates_per_cycle, "runs": [], **machine()}
    try:
        with sigterm_interrupts():  # the daemon in this process must not swallow a stop: the cluster goes
            for spec, reader in itertools.product(specs, readers):
                for n in sizes:
                    result["runs"].append(run_one(spec, n, args, work, say, reader))
                    if args.out:  # after every run: an interrupted bench keeps what it measured
                        write_results(result, Path(args.out))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    short = dict(result)
    short["runs"] = [{k: v for k, v in r.items() if k not in ("cycles", "raw")} for r in result["runs"]]
    print_json(short)
    return 0 if not any(r["errors"] for r in result["runs"]) else 1


def register(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = bsub.add_parser("cycle", help="time the daemon's cycle stage by stage on the local Slurm at several "
                                      "queue lengths (root); commands, updates and a user's sbatch")
    c.add_argument("--pending", default=DEFAULT_PENDING,
                   help=f"pending-job counts (default {DEFAULT_PENDING})")
    c.add_argument("--policies", default=DEFAULT_POLICIES,
                   help=f"rltune:MODEL_DIR or daemon:POLICY, comma-separated (default {DEFAULT_POLICIES})")
    c.add_argument("--steady", type=int, default=5, help="steady cycles to measure per run (default 5)")
    c.add_argument("--interval", type=float, default=10.0, help="seconds between cycle starts (default 10)")
    c.add_argument("--baseline", type=float, default=20.0,
                   help="seconds of a user's sbatch before the daemon starts (default 20)")
    c.add_argument("--every", type=float, default=0.25, help="seconds between a user's sbatch calls")
    c.add_argument("--readers", default="cli", help="comma-separated [slurm] reader values to time: cli "
                   "and/or pyslurm (pyslurm needs Slurm 25.11 with pyslurm installed; default cli)")
    c.add_argument("--accounting", action="store_true",
                   help="start slurmdbd too, so models that read run history get it from sacct")
    c.add_argument("--out", default="", help="directory for results.json and results.md")
    c.add_argument("--quiet", action="store_true", help="JSON only (no progress lines)")
    c.set_defaults(func=bench_cycle)


__all__ = ["parse_policies", "parse_sizes", "phase_of", "register", "summarise",
           "update_kinds"]
