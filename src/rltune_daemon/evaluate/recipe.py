"""Repeat a published evaluation (``rltune evaluate --recipe DIR``).

docs/ puts the command next to every number, but a command means what today's defaults make of it:
since the guard's reference and stretch changed, most published commands, typed again, would run
other settings than they did. A ``results.json`` records every setting (``recorded.settings_as_run``
fills in those it predates), and each learned policy's actor hash, so the run can be repeated as it
was and its numbers compared window by window. The comparison says whether this code still gives
the published numbers; the notes say what keeps it from doing so (a model retrained since).
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.recorded import DAEMON_MULTIFACTOR, settings_as_run
from rltune_daemon.evaluate.runner import METRIC_KEYS, EvalConfig
from rltune_daemon.policies.learned import actor_sha256

RESULTS_FILE = "results.json"


def read_results(run_dir: Path) -> dict[str, Any]:
    """A run directory's ``results.json``; a missing or unreadable one is a one-line error."""
    path = run_dir / RESULTS_FILE
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"--recipe {run_dir}: no {RESULTS_FILE} there; give a directory "
                        "'rltune evaluate --out' wrote") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"--recipe {run_dir}: cannot read {RESULTS_FILE} ({exc})") from None
    if not isinstance(results, dict) or not isinstance(results.get("config"), dict) \
            or not isinstance(results.get("policies"), dict):
        raise UserError(f"--recipe {run_dir}: {RESULTS_FILE} has no config or policies; give a directory "
                        "'rltune evaluate --out' wrote")
    return results


def recipe_config(run_dir: Path, jobs: int = 0, models: Mapping[str, str] | None = None,
                  recorded: dict[str, Any] | None = None) -> tuple[EvalConfig, list[str]]:
    """The ``EvalConfig`` that repeats ``run_dir``'s run (``jobs`` worker processes: they do not change
    the numbers), and notes on what will keep its numbers from being the same. ``models`` maps a model
    directory the run used to one that holds the same model now (a model replaced since, restored from
    git elsewhere); each must hold the actor the run recorded. ``recorded``: its ``results.json`` where
    the caller has read it already."""
    recorded = read_results(run_dir) if recorded is None else recorded
    run = settings_as_run(recorded["config"])
    moved = {recorded_as: ran for ran, recorded_as in renamed_policies(models or {}).items()}
    _check_moved(run, moved, run_dir)
    try:
        guard = run["starvation_seconds"]
        cfg = EvalConfig(
            trace=str(run["trace"]), policies=tuple(moved.get(p, p) for p in run["policies"]),
            windows=int(run["windows"]),
            window_size=int(run["window_size"]), seed=int(run["seed"]), estimates=run["estimates"],
            mode=str(run["mode"]), cluster=run["cluster"],
            opts={str(k): str(v) for k, v in run["opts"].items()}, jobs=jobs, pure=bool(run["pure"]),
            interval=float(run["interval"]), react=float(run["react"]),
            starvation_seconds=math.inf if guard == "off" else float(guard),
            starvation_slots=int(run["starvation_slots"]),
            starvation_stretch=float(run["starvation_stretch"]),
            starvation_reference=str(run["starvation_reference"]), milp=bool(run["milp"]),
            split=str(run["split"]), bf_reservations=int(run["bf_reservations"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"--recipe {run_dir}: its {RESULTS_FILE} lacks a setting this version needs ({exc}); "
                        "run its command again instead") from None
    notes = _model_notes(run, [p for p in run["policies"] if p not in moved])
    # the guard lifts a job above Slurm's own order only when it also measures submit order
    lifts = run["starvation_reference"] != "priority" and run["starvation_seconds"] != "off"
    if "daemon:multifactor" in run["policies"] and run["daemon_multifactor"] != DAEMON_MULTIFACTOR and lifts:
        notes.append("daemon:multifactor: the run wrote the planner's SiteFactors (the starvation guard's "
                     "lifts included); since 2026-11-25 it writes none, as the daemon with base_policy "
                     "multifactor never did, so its rows may move")
    return cfg, notes


def renamed_policies(models: Mapping[str, str]) -> dict[str, str]:
    """For ``--model RECORDED=DIR`` pairs: the policy a repeat runs (``rltune:DIR``) -> the policy the
    recorded run names (``rltune:RECORDED``), as ``differences`` compares them."""
    return {f"rltune:{new}": f"rltune:{old}" for old, new in models.items()}


def _check_moved(run: dict[str, Any], moved: dict[str, str], run_dir: Path) -> None:
    """Each ``--model RECORDED=DIR`` names a learned policy of the run and a directory holding its actor."""
    models = run.get("models") or {}
    policies = list(run.get("policies", ()))
    for old, new in moved.items():
        if old not in policies:
            learned = ", ".join(p.partition(":")[2] for p in policies if p.startswith("rltune:"))
            raise UserError(f"--model {old.partition(':')[2]}=...: {run_dir} has no policy {old} "
                            f"(its models: {learned or 'none'})")
        want = (models.get(old) or {}).get("actor_sha256")
        have = actor_sha256(Path(new.partition(":")[2]))
        if want is not None and have != want:
            raise UserError(f"--model {old.partition(':')[2]}={new.partition(':')[2]}: that directory holds "
                            f"{_holds(have)}, the run used actor {want}; give a directory with that model")


def _model_notes(run: dict[str, Any], policies: list[str]) -> list[str]:
    """One note per learned policy whose model directory no longer holds the model the run used."""
    notes = []
    models = run.get("models") or {}
    for spec in policies:
        if not spec.startswith("rltune:"):
            continue
        path = spec.partition(":")[2]
        want = (models.get(spec) or {}).get("actor_sha256")
        have = actor_sha256(Path(path))
        if want is None:
            notes.append(f"{spec}: the run predates recording its model; its rows are this model's")
        elif have != want:
            notes.append(f"{spec}: {path} now holds {_holds(have)}, the run used actor {want}, so its rows "
                         f"will differ (restore that model from git and pass --model {path}=DIR)")
    return notes


def _holds(sha: str | None) -> str:
    """What a model directory holds, by its actor's hash (``actor_sha256``; None: no model)."""
    return "no model" if sha is None else f"actor {sha}"


def explicit_command(cfg: EvalConfig, out: Path | None = None) -> str:
    """An ``rltune evaluate`` command that names every setting of ``cfg``, so it means the same whatever
    the defaults become (``jobs`` is left out: it does not change the numbers)."""
    hours = "off" if math.isinf(cfg.starvation_seconds) else _num(cfg.starvation_seconds / 3600)
    args = ["--trace", cfg.trace, "--policies", ",".join(cfg.policies), "--windows", str(cfg.windows),
            "--window-size", str(cfg.window_size), "--seed", str(cfg.seed), "--split", cfg.split,
            "--mode", cfg.mode]
    if cfg.estimates is not None:
        args += ["--estimates", cfg.estimates]
    if cfg.cluster is not None:
        args += ["--cluster", cfg.cluster]
    for key, value in cfg.opts.items():
        args += ["--opt", f"{key}={value}"]
    if cfg.pure:
        args.append("--pure")
    args += ["--interval", _num(cfg.interval), "--react", _num(cfg.react), "--starvation-hours", hours,
             "--starvation-slots", str(cfg.starvation_slots), "--starvation-stretch",
             _num(cfg.starvation_stretch), "--starvation-reference", cfg.starvation_reference,
             "--bf-reservations", str(cfg.bf_reservations), "--placement", "milp" if cfg.milp else "greedy"]
    if out is not None:
        args += ["--out", str(out)]
    return "rltune evaluate " + " ".join(shlex.quote(a) for a in args)


def _num(x: float) -> str:
    """``x`` as short as it reads back exactly (60, 0.5, 1234567.5; not ``:g``'s 1.23457e+06)."""
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


def differences(recorded: dict[str, Any], new: dict[str, Any], rel: float = 1e-9,
                renamed: Mapping[str, str] | None = None) -> list[str]:
    """One line per policy whose numbers differ from the recorded ones (any metric of any window beyond
    ``rel``): its mean BSLD and wait then and now, in how many windows, and the largest relative
    difference (a last-digit change reads differently from another result); empty when all agree.
    ``renamed`` maps a new run's policy to the recorded one it repeats (``--model``)."""
    lines = []
    for ran, now in new["policies"].items():
        spec = (renamed or {}).get(ran, ran)  # named as the recorded run names it
        then = recorded["policies"].get(spec)
        if then is None:
            lines.append(f"`{spec}`: not in the recorded run")
            continue
        old = {w["window"]: w for w in then.get("per_window", [])}
        gaps = [_gap(w, old.get(w["window"])) for w in now["per_window"]]
        moved = [g for g in gaps if g[0] > rel]
        if moved:
            size, key = max(moved)
            largest = "a window the run did not have" if math.isinf(size) else f"{size:.2g} in {key}"
            lines.append(f"`{spec}`: BSLD {then['bsld']:.2f} -> {now['bsld']:.2f}, wait "
                         f"{then['wait_mean']:.0f} -> {now['wait_mean']:.0f} s ({len(moved)} of {len(gaps)} "
                         f"windows differ; largest relative difference {largest})")
    return lines


def _gap(now: dict[str, Any], then: dict[str, Any] | None) -> tuple[float, str]:
    """A window's largest relative metric difference (of the larger of the two values) and its metric
    (only metrics both runs recorded: older files lack some); infinite when the recorded run lacks the
    window."""
    if then is None:
        return math.inf, "window"
    gaps = [(abs(now[k] - then[k]) / max(abs(now[k]), abs(then[k])), k)  # at most 1, even from 0
            for k in METRIC_KEYS if k in now and k in then and now[k] != then[k]]
    return max(gaps, default=(0.0, ""))
