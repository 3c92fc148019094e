"""``rltune site`` end to end: read (or load) the site's four exports, turn them into a history, check
the simulator against it, judge the options on its recent part, and pick one.

The history is split once by submit order: the older part is what policies learn from (QSSF's run
history, the fine-tuned model's episodes); the recent part, laid out as disjoint windows, is what every
option is judged on. Nothing is fitted on the recent part. Every option runs on the site's own
multifactor (``EvalConfig.slurm_config``), with Slurm-like passes (main scheduler at events, backfill
every ``bf_interval``, a reservation for each job tested) and no placement effects.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.engines import parse_engine
from rltune_daemon.evaluate.runner import EvalConfig, evaluate
from rltune_daemon.evaluate.verdict import LEAVE, decide
from rltune_daemon.policies.learned import read_manifest
from rltune_daemon.policies.multifactor import Multifactor, MultifactorWeights
from rltune_daemon.policies.slurm_priority import cluster_weights
from rltune_daemon.sim.config import SLURM_RESERVATIONS
from rltune_daemon.site.exports import Exports, ProgressSay, read_dir, read_live, write_dir
from rltune_daemon.site.history import History, load_history
from rltune_daemon.site.selfcheck import self_check, trust
from rltune_daemon.traces.export import write_cluster, write_csv
from rltune_daemon.train.heldout import HeldoutSpec, record_of, references, write_manifest

RECENT_SHARE = 0.3  # of the history, judged; the rest is what policies learn from
WINDOWS_MAX, WINDOW_SIZE_MAX = 10, 1024
MIN_WINDOW = 10
MIN_JOBS = 2 * MIN_WINDOW * 3  # fewer jobs cannot give a learning part and two windows to judge on


@dataclass(frozen=True)
class SiteConfig:
    out: Path
    days: float = 30.0
    minutes: float = 30.0  # fine-tuning budget (0: no fine-tuned model)
    source: Path | None = None  # --from: a saved export folder instead of the live cluster
    export: Path | None = None  # --export: save what was read
    slurm_conf: str | None = None
    models: Path = Path("models")
    init: str = "testbed-multifactor"  # the shipped model a fine-tuning starts from
    heuristics: tuple[str, ...] = ("sjf", "qssf")
    seed: int = 0
    engine: str = "local"
    jobs: int = 0


def windows_for(n_jobs: int) -> tuple[int, int]:
    """(windows, jobs per window) over the recent ``RECENT_SHARE`` of ``n_jobs``: up to 10 windows of up
    to 1,024 jobs, as many as the recent part holds, at least two (a paired comparison needs two)."""
    recent = int(n_jobs * RECENT_SHARE)
    size = min(WINDOW_SIZE_MAX, max(MIN_WINDOW, recent // WINDOWS_MAX))
    windows = min(WINDOWS_MAX, recent // size)
    if n_jobs < MIN_JOBS or windows < 2:
        raise UserError(f"the history has {n_jobs} jobs that ran; rltune site needs at least {MIN_JOBS} "
                        "(widen --days)")
    return windows, size


def shipped_models(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*") if (p / "manifest.json").exists()) if folder.is_dir() else []


def run_site(cfg: SiteConfig, command: str) -> dict[str, Any]:
    """Everything ``rltune site`` writes into ``cfg.out``, as results.json holds it."""
    say = ProgressSay()
    clock = Stopwatch()
    exports = read_dir(cfg.source) if cfg.source is not None else read_live(cfg.days, cfg.slurm_conf, say)
    if cfg.export is not None:
        for path in write_dir(exports, cfg.export):
            say(f"saved {path}")
    clock.lap("read")
    history = load_history(exports, cfg.seed)
    say(f"history: {len(history.workload.jobs)} jobs that ran on {len(history.workload.cluster.nodes)} nodes"
        + "".join(f"; {n}" for n in history.notes))
    for problem in history.problems[:5]:
        print(f"skipped: {problem}", file=sys.stderr)
    if len(history.problems) > 5:
        print(f"skipped: {len(history.problems) - 5} more lines (counted in results.json)", file=sys.stderr)
    files = write_history(history, exports, cfg.out / "history")
    weights, notes = cluster_weights(exports.config, 1.0)
    base = EvalConfig(trace=str(files["jobs"]), policies=(LEAVE,), estimates="trace",
                      cluster=str(files["cluster"]), pure=True, bf_reservations=SLURM_RESERVATIONS,
                      slurm_config=str(files["config"]), passes="slurm", seed=cfg.seed, jobs=cfg.jobs)
    say("self-check: simulating the whole history under the site's multifactor and the default formula")
    clock.lap("history")
    fidelity = self_check(history, Multifactor(weights), Multifactor(MultifactorWeights()), base.sim_config(),
                          workers=cfg.jobs or (os.cpu_count() or 1))
    clock.lap("self_check")
    paper = fidelity["default_formula"]
    say(f"self-check: mean wait error {fidelity['wait_rel_error']:+.1%}, start Spearman "
        f"{fidelity['start_spearman']:.3f} (default formula: {paper['wait_rel_error']:+.1%}, "
        f"{paper['start_spearman']:.3f})")
    windows, size = windows_for(len(history.workload.jobs))
    policies = [LEAVE, "default", *(f"daemon:{h}" for h in cfg.heuristics)]
    models = shipped_models(cfg.models)
    if not models:
        say(f"no models under {cfg.models}: only Slurm and the daemon's heuristics are judged (--models DIR)")
    policies += [f"rltune:{m}" for m in models]
    tuned = fine_tune(cfg, history, files, windows * size, say) if cfg.minutes > 0 else None
    if tuned is not None:
        policies += [*references(tuned_base(tuned)).values(), f"rltune:{tuned}"]
    policies = list(dict.fromkeys(policies))
    clock.lap("fine_tune")
    ecfg = dataclasses.replace(base, policies=tuple(policies), windows=windows, window_size=size,
                               split="recent")
    say(f"counterfactual: {len(policies)} options on {windows} windows x {size} recent jobs")
    engine = parse_engine(cfg.engine, cfg.out / "slurm-jobs")
    results = evaluate(ecfg, progress=sys.stderr.isatty(), engine=engine)
    if tuned is not None:
        record_tuned(tuned, results, ecfg)
    clock.lap("counterfactual")
    choice, line = decide(results)
    choice, line, declined = gate(choice, line, results, fidelity)
    say.done()
    return {"command": command, "source": exports.source, "history": history_summary(history),
            "priority": {"weights": dataclasses.asdict(weights), "notes": notes},
            "fidelity": fidelity, "evaluation": results,
            "verdict": {"choice": choice or LEAVE, "line": line, "declined": declined,
                        "fine_tuned": str(tuned) if tuned else None},
            "timings": clock.laps}


class Stopwatch:
    """Seconds of each stage, for the report and ``rltune bench site``."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self.t
        self.t = now


def gate(choice: str, line: str, results: dict[str, Any], fidelity: dict[str, Any]) -> tuple[str, str, str]:
    """The evaluation's choice, unless the self-check cannot back it: then leave Slurm alone and say why
    (the third value; "" when the choice stands)."""
    if not choice or choice == LEAVE:
        return LEAVE, line or "verdict: leave Slurm alone (multifactor)", ""
    pols = results["policies"]
    ref = float(pols[LEAVE]["wait_mean"])
    gain = (float(pols[choice]["wait_mean"]) - ref) / ref if ref else math.inf
    why = trust(fidelity, gain)
    if not why:
        return choice, line, ""
    return LEAVE, f"verdict: leave Slurm alone (multifactor): {why}; the simulation alone said: {line}", why


def write_history(history: History, exports: Exports, folder: Path) -> dict[str, Path]:
    """The history as files ``rltune evaluate`` and ``rltune train`` load: the jobs (CSV), the cluster and
    the site's ``scontrol show config``, and the older part alone for training."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"jobs": folder / "jobs.csv", "cluster": folder / "cluster.txt", "config": folder / "config.txt",
             "older": folder / "older.csv"}
    write_csv(history.workload, files["jobs"])
    write_cluster(history.workload.cluster, files["cluster"])
    files["config"].write_text(exports.config, encoding="utf-8")
    return files


def fine_tune(cfg: SiteConfig, history: History, files: dict[str, Path], judged: int, say: ProgressSay
              ) -> Path | None:
    """A shipped model fine-tuned on the older part only, for ``cfg.minutes``; None when none is shipped."""
    from rltune_daemon.train.args import TrainArgs
    from rltune_daemon.train.run import train

    init = cfg.models / cfg.init
    if not (init / "manifest.json").exists():
        say(f"no fine-tuning: {init} is not a model (give --models DIR or --minutes 0)")
        return None
    older = history.workload.with_jobs(history.workload.jobs[: len(history.workload.jobs) - judged])
    write_csv(older, files["older"])
    out = cfg.out / "model"
    manifest = read_manifest(init)
    # the starting model's own settings (features, layers, reward...), this site's data and budget
    known = {f.name for f in dataclasses.fields(TrainArgs)}
    hp = {k: v for k, v in (manifest.get("hyperparameters") or {}).items() if k in known}
    episode = max(MIN_WINDOW, min(int(hp.get("episode_jobs", TrainArgs.episode_jobs)), len(older.jobs) // 8))
    args = TrainArgs(**{**hp, "trace": str(files["older"]), "out": out, "cluster": str(files["cluster"]),
                        "opts": {}, "base": str(manifest.get("base_policy", LEAVE)), "init": init,
                        "estimates": "trace", "slurm_config": str(files["config"]), "minutes": cfg.minutes,
                        "max_iterations": 0, "episode_jobs": episode,
                        "max_steps_per_episode": min(int(hp.get("max_steps_per_episode", episode)), episode),
                        "bf_reservations": SLURM_RESERVATIONS, "seed": cfg.seed, "heldout_windows": 0,
                        "workers": cfg.jobs, "progress": sys.stderr.isatty()})
    say(f"fine-tuning {init} on the {len(older.jobs)} older jobs for {cfg.minutes:g} min")
    train(args)
    return out


def tuned_base(model: Path) -> str:
    return str(read_manifest(model).get("base_policy", LEAVE))


def record_tuned(model: Path, results: dict[str, Any], ecfg: EvalConfig) -> None:
    """The fine-tuned model's held-out record, from the site's own judgement of it on the recent windows
    (never seen in its training): what the daemon's model gate reads at start."""
    manifest = read_manifest(model)
    spec = HeldoutSpec(trace=ecfg.trace, base=tuned_base(model), opts={}, cluster=ecfg.cluster,
                       windows=ecfg.windows, window_size=ecfg.window_size, seed=ecfg.seed, estimates="trace",
                       bf_reservations=ecfg.bf_reservations, slurm_config=ecfg.slurm_config)
    record = {**record_of(results, spec, f"rltune:{model}"), "split": ecfg.split}
    write_manifest(model, {**manifest, "heldout": record})


def history_summary(history: History) -> dict[str, Any]:
    wl = history.workload
    span = (wl.jobs[-1].submit - wl.jobs[0].submit) / 86400.0 if wl.jobs else 0.0
    return {"jobs": len(wl.jobs), "days": span, "nodes": len(wl.cluster.nodes), "gpus": wl.cluster.total_gpus,
            "partitions": list(wl.cluster.partition_names), "skipped": history.skipped,
            "release_latency": history.release_latency,
            "problems": history.problems[:50], "notes": history.notes}
