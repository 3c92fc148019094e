"""Where a model stands on its own manifest's held-out record: is it behind what the daemon would do
without it?

Without the model a site runs either Slurm's multifactor order (no daemon) or the daemon applying the
model's base policy (``daemon:<base>``). The record (``train.heldout``) holds every window's BSLD and
wait for the model and for both, so "behind" is judged as ``rltune compare`` judges: the model is behind
one of them when its BSLD or its wait is higher beyond 2 standard errors of the per-window difference.
The model is also behind multifactor when the record shows it doing harm (``harm``: a job-size class
waiting much longer, a longer tail, idler GPUs), or when the record predates the figures that criterion
needs: a model is run only on evidence that no class of jobs pays for its gains. The daemon will not act
on a model that is behind unless told to (``run_model_behind_base``); it runs instead what the record
shows ahead, multifactor when both are.

Records written before ``daemon_base`` and the per-window lists hold the base policy ranked at every
event (``base``) and means alone; then a higher mean BSLD than ``base`` counts, as it always did, and the
reason says how to measure again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rltune_daemon import harm, stats

METRICS = (("bsld", "bounded slowdown"), ("wait_mean", "wait"))
MULTIFACTOR = "multifactor"


@dataclass(frozen=True)
class Standing:
    """``reason`` is "" when the model is not behind; else one line, and ``instead`` the policy the
    record shows ahead of it (what the daemon runs in its place)."""

    reason: str = ""
    instead: str = ""


def _series(record: Mapping[str, Any], name: str, key: str) -> list[float]:
    """One policy's per-window values of ``key`` from the record, [] when it has none."""
    windows = record.get("per_window")
    values = windows.get(name, {}).get(key) if isinstance(windows, Mapping) else None
    return [float(v) for v in values] if isinstance(values, list) else []


def _verdicts(record: Mapping[str, Any], ref: str) -> list[str]:
    """Each metric on which the model is higher than ``ref`` beyond noise, described; [] for none."""
    out = []
    for key, name in METRICS:
        a, b = _series(record, "model", key), _series(record, ref, key)
        if len(a) >= 2 and len(a) == len(b):
            p = stats.paired(a, b)
            if p.verdict == "higher":
                unit = " s" if key == "wait_mean" else ""
                out.append(f"{name} {p.a:.2f}{unit} against {p.b:.2f}{unit} "
                           f"(+{p.diff:.2f} ± {p.se:.2f} per window, beyond 2 standard errors)")
            continue
        if key != "bsld":  # without windows only the mean slowdown is judged, as records always were
            continue
        model, base = (record.get("model") or {}).get(key), (record.get(ref) or {}).get(key)
        if isinstance(model, (int, float)) and isinstance(base, (int, float)) and model > base:
            out.append(f"mean bounded slowdown {model:.2f} against {base:.2f} (no noise band: 'rltune "
                       "heldout MODEL --replace' records every window of at least 2)")
    return out


def _references(record: Mapping[str, Any], base: str) -> list[tuple[str, str]]:
    """(record key, policy) of what the daemon would run without the model, simplest first."""
    if "daemon_base" in record or MULTIFACTOR in record:
        refs = [(MULTIFACTOR, MULTIFACTOR)]
        return refs + ([("daemon_base", base)] if "daemon_base" in record and base != MULTIFACTOR else [])
    return [("base", base)]  # an older record: the base policy, ranked at every event


def _figures(record: Mapping[str, Any], name: str) -> harm.Figures | None:
    entry = record.get(name)
    per = record.get("per_window")
    if not isinstance(entry, Mapping) or not isinstance(per, Mapping) or name not in per:
        return None
    merged = {**entry, "per_window": per[name]}
    return harm.Figures.from_entry(merged) if harm.has_figures(merged) else None


def harm_failures(record: Mapping[str, Any]) -> list[str] | None:
    """What the record shows the model hurting against multifactor ([] for nothing), or None when the
    record predates the figures the criterion needs."""
    model, mf = _figures(record, "model"), _figures(record, MULTIFACTOR)
    if model is None or mf is None:
        return None
    unit = "processors" if record.get("resource") == "cpu" else "GPUs"
    return list(harm.judge(model, mf, unit).failures)


PREDATES = ("its held-out record predates the no-harm figures (wait per size class, p99 wait, GPU "
            "utilisation): measure it again with 'rltune heldout MODEL --replace'")


def standing(manifest: Mapping[str, Any]) -> Standing:
    """Whether the model is behind multifactor or its base policy on its held-out record, and if so why
    and what to run instead; ``Standing()`` when not, or when the manifest has no held-out record."""
    record = manifest.get("heldout")
    if not isinstance(record, Mapping):
        return Standing()
    base = str(manifest.get("base_policy", "?"))
    trace, n = manifest.get("trace", "?"), record.get("windows", "?")
    where = f"on {n} held-out windows of {trace} this model"
    hurts = harm_failures(record)
    found = []
    if hurts is None:
        found.append((MULTIFACTOR, f"{where} is not shown to do no harm: {PREDATES}"))
    elif hurts:  # the criterion also holds the means against multifactor
        found.append((MULTIFACTOR, f"{where} fails the no-harm check against multifactor: "
                      + "; ".join(hurts)))
    found += [(policy, f"{where} is behind {policy}: " + "; ".join(v))
              for key, policy in _references(record, base)
              if not (key == MULTIFACTOR and hurts is not None) and (v := _verdicts(record, key))]
    if not found:
        return Standing()
    # multifactor when the record shows it ahead: the one option that cannot be behind itself
    instead = MULTIFACTOR if any(p == MULTIFACTOR for p, _ in found) else found[0][0]
    return Standing("; ".join(text for _, text in found), instead)
