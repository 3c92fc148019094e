"""The priority the simulator gives a replay's jobs: the cluster's own multifactor, read from its
``scontrol show config`` (weights, PriorityMaxAge, accounting), not the evaluation's default formula.
A replay compares the simulator with *this* Slurm, so both must rank jobs by the same arithmetic."""

from __future__ import annotations

import re

from rltune_daemon.errors import UserError
from rltune_daemon.policies.multifactor import MultifactorWeights

_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*=\s*(.*?)\s*$")


def parse_config(text: str) -> dict[str, str]:
    """``scontrol show config`` as key -> value (first occurrence wins)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            out.setdefault(m.group(1), m.group(2))
    return out


def slurm_duration(text: str) -> float:
    """Seconds of a Slurm duration as ``scontrol show config`` prints it: ``[D-]HH:MM:SS``, ``MM:SS``,
    or minutes alone."""
    t = text.strip()
    days = 0
    if "-" in t:
        d, t = t.split("-", 1)
        days = int(d)
    parts = [int(p) for p in t.split(":")] if t else [0]
    if len(parts) == 1:
        secs = parts[0] * 60
    elif len(parts) == 2:
        secs = parts[0] * 60 + parts[1]
    else:
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return days * 86400.0 + secs


def _weight(cfg: dict[str, str], key: str) -> float:
    value = cfg.get(key, "0").strip()
    try:
        return float(value)
    except ValueError:
        return 0.0


def cluster_weights(config_text: str, speedup: float) -> tuple[MultifactorWeights, list[str]]:
    """The cluster's multifactor in trace time (PriorityMaxAge times ``speedup``) and notes on what
    the simulator cannot follow. Refuses a priority the simulator does not model at all."""
    cfg = parse_config(config_text)
    ptype = cfg.get("PriorityType", "")
    if ptype != "priority/multifactor":
        raise UserError(f"the cluster runs {ptype or 'no PriorityType'}; a replay compares against "
                        "priority/multifactor only")
    if cfg.get("PriorityFavorSmall", "No").lower().startswith("y"):
        raise UserError("the cluster has PriorityFavorSmall=YES, which the simulator does not model")
    notes: list[str] = []
    accounting = cfg.get("AccountingStorageType", "accounting_storage/none") != "accounting_storage/none"
    # Without accounting Slurm ignores the age and fair-share factors (FACTS, lab notes).
    age = _weight(cfg, "PriorityWeightAge") if accounting else 0.0
    fairshare = _weight(cfg, "PriorityWeightFairShare") if accounting else 0.0
    if fairshare:
        notes.append(f"PriorityWeightFairShare={fairshare:g}: fair-share is simulated from the window's "
                     "own usage, not the cluster's history")
    tres = cfg.get("PriorityWeightTRES", "(null)")
    if tres not in ("(null)", "") and any(float(v) for v in re.findall(r"=(\d+(?:\.\d+)?)", tres)):
        notes.append(f"PriorityWeightTRES={tres} is not simulated")
    max_age = slurm_duration(cfg.get("PriorityMaxAge", "7-00:00:00")) * speedup
    weights = MultifactorWeights(age=age, fairshare=fairshare, job_size=_weight(cfg, "PriorityWeightJobSize"),
                                 partition=_weight(cfg, "PriorityWeightPartition"),
                                 qos=_weight(cfg, "PriorityWeightQOS"), max_age=max(max_age, 1.0),
                                 size_mode="slurm")
    return weights, notes


BF_INTERVAL_DEFAULT = 30.0  # Slurm's default bf_interval (seconds)


def backfill_interval(config_text: str) -> float:
    """``bf_interval`` of the cluster's SchedulerParameters, in the cluster's seconds."""
    params = parse_config(config_text).get("SchedulerParameters", "")
    for item in params.split(","):
        key, _, value = item.strip().partition("=")
        if key == "bf_interval" and value.strip().isdigit():
            return float(value)
    return BF_INTERVAL_DEFAULT
