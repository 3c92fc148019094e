"""The held-out result a model's manifest records: the model against its base policy (ranked at every
event, and applied by the daemon) and Slurm's multifactor on the trace's held-out windows, with every
window's BSLD and wait so that the daemon can tell a difference from noise (``policies.standing``).
Training measures it after export (``--heldout-windows``); ``rltune heldout`` measures it later for a
model trained with ``--heldout-windows 0`` (chosen first, on training windows only), so that every
shipped manifest carries the record the daemon's start checks."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rltune_daemon.errors import UserError
from rltune_daemon.policies.learned import MANIFEST_FILE, load_learned
from rltune_daemon.sim.config import checked_reservations

# with the per-class waits and the p99 and utilisation figures the daemon's no-harm gate judges
HELDOUT_KEYS = ("bsld", "wait_mean", "jct_mean", "utilization", "utilization_arrival", "wait_p99",
                "wait_by_size")
PER_WINDOW_KEYS = ("bsld", "wait_mean")
MULTIFACTOR = "multifactor"  # what an admin runs without the daemon: the reference every model must beat


@dataclass(frozen=True)
class HeldoutSpec:
    """Which windows, under which simulator, a model is measured on against its base policy."""

    trace: str
    base: str
    opts: dict[str, str]
    cluster: str | None = None
    windows: int = 10
    window_size: int = 1024
    seed: int = 0  # training draws its held-out windows with the training seed
    estimates: str | None = "user"
    mode: str = "daemon"
    bf_reservations: int = 1
    jobs: int = 0
    slurm_config: str = ""  # the simulated Slurm's priority (EvalConfig.slurm_config)


def measure_heldout(model_dir: Path, spec: HeldoutSpec, progress: bool = False) -> dict[str, Any]:
    """The manifest's ``heldout`` record of the model in ``model_dir``."""
    from rltune_daemon.evaluate.runner import EvalConfig, evaluate

    policy = f"rltune:{model_dir}"
    refs = references(spec.base)
    policies = tuple(dict.fromkeys((*refs.values(), policy)))
    cfg = EvalConfig(trace=spec.trace, policies=policies, windows=spec.windows,
                     window_size=spec.window_size, seed=spec.seed, estimates=spec.estimates, mode=spec.mode,
                     opts=spec.opts, cluster=spec.cluster, jobs=spec.jobs,
                     bf_reservations=spec.bf_reservations, slurm_config=spec.slurm_config)
    return record_of(evaluate(cfg, progress=progress), spec, policy)


def references(base: str) -> dict[str, str]:
    """The base ranked at every event (the trainer's reward reference), and what the daemon runs instead
    of the model: Slurm's own order, or the base policy applied by the daemon."""
    refs = {"base": base, MULTIFACTOR: MULTIFACTOR}
    if base != MULTIFACTOR:
        refs["daemon_base"] = f"daemon:{base}"
    return refs


def record_of(res: dict[str, Any], spec: HeldoutSpec, policy: str) -> dict[str, Any]:
    """The ``heldout`` record of ``policy`` from an evaluation ``res`` that ran it and ``references``."""
    named = {"model": policy, **references(spec.base)}
    return {"windows": spec.windows, "window_size": spec.window_size, "seed": spec.seed,
            "bf_reservations": spec.bf_reservations, "resource": res["config"].get("resource", "gpu"),
            **{name: {k: res["policies"][p][k] for k in HELDOUT_KEYS} for name, p in named.items()},
            "per_window": {name: {k: [float(w[k]) for w in res["policies"][p]["per_window"]]
                                  for k in PER_WINDOW_KEYS} for name, p in named.items()}}


def write_manifest(model_dir: Path, manifest: dict[str, Any]) -> None:
    """Replace the manifest in one step, so a daemon reading it never sees half a file."""
    path = model_dir / MANIFEST_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


def record_heldout(model_dir: Path, windows: int = 10, window_size: int = 1024, seed: int | None = None,
                   bf_reservations: int | None = None, jobs: int = 0, replace: bool = False,
                   progress: bool = False) -> dict[str, Any]:
    """Measure the model in ``model_dir`` on its own trace's held-out windows (its training seed and
    backfill unless given) and write the result into its manifest; returns the record."""
    if windows < 1 or window_size < 2:
        raise UserError(f"--windows {windows} --window-size {window_size}: give at least 1 window of 2 jobs")
    # a model the daemon would refuse is refused here, before any simulation; its manifest comes with it
    manifest = load_learned(model_dir).manifest
    old = manifest.get("heldout")
    if old and not replace:
        raise UserError(f"model {model_dir}: its manifest already records a held-out result "
                        f"({old.get('windows')} windows, seed {old.get('seed', 0)}); give --replace to "
                        "measure it again")
    if not manifest.get("trace") or not manifest.get("base_policy"):
        raise UserError(f"model {model_dir}: its manifest names no trace or base policy to measure it on; "
                        "evaluate it with 'rltune evaluate --policies BASE,rltune:MODEL' instead")
    spec = HeldoutSpec(
        trace=str(manifest["trace"]), base=str(manifest["base_policy"]),
        opts={str(k): str(v) for k, v in (manifest.get("trace_options") or {}).items()},
        cluster=manifest.get("cluster"),
        windows=windows, window_size=window_size,
        seed=int(manifest.get("seed", 0)) if seed is None else seed,
        estimates=manifest.get("estimates", "user"), mode=str(manifest.get("mode", "daemon")),
        bf_reservations=checked_reservations(int(manifest.get("bf_reservations", 1))  # before the key: EASY
                                             if bf_reservations is None else bf_reservations), jobs=jobs,
        slurm_config=str((manifest.get("hyperparameters") or {}).get("slurm_config", "")))
    record = measure_heldout(model_dir, spec, progress)
    write_manifest(model_dir, {**manifest, "heldout": record})
    return record
