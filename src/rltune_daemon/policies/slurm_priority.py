"""A cluster's own multifactor, read from its ``scontrol show config`` (weights, PriorityMaxAge,
PriorityFavorSmall, accounting), not the evaluation's default formula. A replay compares the simulator
with *this* Slurm and ``rltune site`` judges a site's history against what *its* Slurm does, so the
simulator must rank jobs by the same arithmetic."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from rltune_daemon.errors import UserError
from rltune_daemon.policies.multifactor import Multifactor, MultifactorWeights

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
    notes: list[str] = []
    # 22.05 prints accounting_storage/none; 23.11 and later, where that plugin is gone, (null)
    accounting = cfg.get("AccountingStorageType", "").strip() not in ("", "(null)", "accounting_storage/none")
    # Without accounting Slurm ignores the age and fair-share factors (FACTS, lab notes).
    age = _weight(cfg, "PriorityWeightAge") if accounting else 0.0
    fairshare = _weight(cfg, "PriorityWeightFairShare") if accounting else 0.0
    if fairshare:
        notes.append(f"PriorityWeightFairShare={fairshare:g}: fair-share is simulated from the window's "
                     "own usage, not the cluster's history")
    tres = cfg.get("PriorityWeightTRES", "(null)")
    if tres not in ("(null)", "") and any(float(v) for v in re.findall(r"=(\d+(?:\.\d+)?)", tres)):
        notes.append(f"PriorityWeightTRES={tres} is not simulated")
    qos = _weight(cfg, "PriorityWeightQOS")
    if qos:
        notes.append(f"PriorityWeightQOS={qos:g} is not simulated: every QOS counts alike")
    if "SMALL_RELATIVE_TO_TIME" in cfg.get("PriorityFlags", "").upper():
        notes.append("PriorityFlags=SMALL_RELATIVE_TO_TIME is not simulated: the job-size factor ignores "
                     "time limits")
    favor_small = cfg.get("PriorityFavorSmall", "No").lower().startswith("y")
    max_age = slurm_duration(cfg.get("PriorityMaxAge", "7-00:00:00")) * speedup
    weights = MultifactorWeights(age=age, fairshare=fairshare, job_size=_weight(cfg, "PriorityWeightJobSize"),
                                 partition=_weight(cfg, "PriorityWeightPartition"),
                                 qos=qos, max_age=max(max_age, 1.0),
                                 size_mode="slurm-small" if favor_small else "slurm")
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


def read_config_file(path: str) -> str:
    """The text of a saved ``scontrol show config``, or a one-line error naming the file. Every
    controller of an evaluation and every training episode asks: the file is read and checked once per
    version of it (its size and modification time), not once per run."""
    try:
        st = Path(path).stat()
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return _read_config(path, st.st_mtime_ns, st.st_size)


def _unreadable(path: str, exc: OSError) -> UserError:
    return UserError(f"{path}: cannot read the Slurm configuration ({exc.strerror or exc}); save it with "
                     "`scontrol show config > config.txt`")


@functools.lru_cache(maxsize=8)
def _read_config(path: str, mtime_ns: int, size: int) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if "PriorityType" not in parse_config(text):
        raise UserError(f"{path}: not the output of `scontrol show config` (no PriorityType line)")
    return text


def site_multifactor(config_path: str) -> Multifactor | None:
    """The multifactor of the cluster whose ``scontrol show config`` is saved at ``config_path`` (in
    the cluster's own seconds), or None for no file: the evaluation's default formula."""
    if not config_path:
        return None
    return Multifactor(cluster_weights(read_config_file(config_path), 1.0)[0])
