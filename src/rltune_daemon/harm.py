"""Does a policy make any class of jobs pay for its gains? The "no harm" criterion, against Slurm's
multifactor order on the same windows.

A lower mean is no win when the large jobs wait much longer for it, the tail grows or GPUs idle: an
order that favours short jobs lowers every mean by pushing the big jobs to the back, where the cluster
drains for them. A policy does **no harm** against a reference (multifactor) when

* every job-size class (GPUs, or processors on a CPU-only cluster) with at least ``min_jobs`` jobs
  (counted in the reference's run) waits on average at most ``class_factor`` × the reference's mean
  + ``class_slack`` seconds;
* the 99th percentile of every job's wait is at most ``p99_factor`` × the reference's (+
  ``class_slack``, so that a reference whose p99 is a few seconds does not forbid any change);
* GPU utilisation, over the makespan and over the span of the window's arrivals, is at least the
  reference's − ``util_slack``;
* mean BSLD and mean wait are not higher beyond ``sigma`` standard errors of the per-window difference
  (``stats.paired``, the rule of every verdict).

Every evaluation, ``rltune compare``, the verdict line, a model's held-out record (the daemon's gate) and
``rltune replay``'s report judge with this one function. Inputs are plain figures (``Figures``), built
from an evaluation's per-policy entry or a manifest's record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rltune_daemon import stats

# Job-size classes (GPUs, or processors on a CPU-only cluster): inclusive bounds, smallest first.
SIZE_CLASSES = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 64), (65, 1 << 62))


def size_label(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}+" if hi >= 1 << 62 else f"{lo}-{hi}"


SIZE_LABELS = tuple(size_label(lo, hi) for lo, hi in SIZE_CLASSES)


def size_class(size: int) -> str:
    """The class label of a job asking for ``size`` GPUs (sizes below 1 count as 1)."""
    for lo, hi in SIZE_CLASSES:
        if size <= hi:
            return size_label(lo, hi)
    return SIZE_LABELS[-1]


def size_classes(sizes: Sequence[int] | np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Index into ``SIZE_CLASSES`` of every size (vectorised ``size_class``)."""
    his = np.array([hi for _, hi in SIZE_CLASSES], dtype=np.int64)
    at_least_one = np.maximum(np.asarray(sizes, dtype=np.int64), 1)
    return np.searchsorted(his, at_least_one, side="left").astype(np.int64)


def wait_by_class(waits: np.ndarray[Any, Any], sizes: np.ndarray[Any, Any]) -> dict[str, dict[str, float]]:
    """Mean wait and job count of each size class that has jobs (``waits`` NaN: did not run, left out)."""
    waits = np.asarray(waits, dtype=float)
    cls = size_classes(sizes)
    out: dict[str, dict[str, float]] = {}
    for k, label in enumerate(SIZE_LABELS):
        w = waits[(cls == k) & ~np.isnan(waits)]
        if len(w):
            out[label] = {"jobs": len(w), "wait_mean": float(w.mean())}
    return out


@dataclass(frozen=True)
class Rule:
    """The thresholds of the criterion (module docstring)."""

    class_factor: float = 1.1
    class_slack: float = 60.0
    min_jobs: int = 50
    p99_factor: float = 1.1
    util_slack: float = 0.01
    sigma: float = stats.SIGMA_DEFAULT


RULE = Rule()


@dataclass(frozen=True)
class Figures:
    """What the criterion needs of one policy on a set of windows."""

    bsld: tuple[float, ...]  # per window
    wait: tuple[float, ...]  # per window mean wait
    classes: Mapping[str, Mapping[str, float]]  # size class -> {"jobs", "wait_mean"}, over all windows
    wait_p99: float  # over every job of every window
    utilization: float  # mean over windows, over the makespan
    utilization_arrival: float  # mean over windows, over the span of the window's arrivals

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> Figures:
        """From an evaluation's policy entry (``rltune evaluate``'s results) or a manifest's record,
        which keep the same keys. A key the entry predates raises ``KeyError``."""
        per = entry["per_window"]
        if isinstance(per, Mapping):  # a manifest's record: {metric: [per window]}
            bsld, wait = per["bsld"], per["wait_mean"]
        else:
            bsld, wait = [w["bsld"] for w in per], [w["wait_mean"] for w in per]
        return cls(tuple(float(x) for x in bsld), tuple(float(x) for x in wait),
                   {str(k): {"jobs": float(v["jobs"]), "wait_mean": float(v["wait_mean"])}
                    for k, v in entry["wait_by_size"].items()},
                   float(entry["wait_p99"]), float(entry["utilization"]), float(entry["utilization_arrival"]))


def has_figures(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` carries everything ``Figures.from_entry`` needs (results written before the
    criterion existed do not)."""
    try:
        Figures.from_entry(entry)
    except (KeyError, TypeError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class ClassCheck:
    label: str
    jobs: int
    wait: float
    reference: float
    limit: float

    @property
    def ok(self) -> bool:
        return self.wait <= self.limit

    @property
    def ratio(self) -> float:
        return self.wait / self.reference if self.reference > 0 else float("inf") if self.wait > 0 else 1.0


@dataclass(frozen=True)
class Judgement:
    """The criterion's outcome: ``ok`` when no check failed; ``failures`` one phrase per failed check,
    the worst class first; ``hurt`` the labels of the classes that wait too long."""

    failures: tuple[str, ...]
    classes: tuple[ClassCheck, ...]
    hurt: tuple[str, ...]
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def line(self) -> str:
        """One line: "no harm", or what it hurts."""
        return "no harm" if self.ok else "harm: " + "; ".join(self.failures)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "failures": list(self.failures), "hurt_classes": list(self.hurt),
                "classes": {c.label: {"jobs": c.jobs, "wait_mean": c.wait, "reference": c.reference,
                                      "limit": c.limit, "ok": c.ok} for c in self.classes},
                **self.figures}


def judge(a: Figures, ref: Figures, unit: str = "GPUs", rule: Rule = RULE, name: str = "multifactor"
          ) -> Judgement:
    """``a`` against ``ref`` (the same windows) by ``rule``. ``unit`` names the size classes' resource
    and ``name`` the reference in the failure phrases."""
    classes = []
    for label in SIZE_LABELS:
        r = ref.classes.get(label)
        if r is None or r["jobs"] < rule.min_jobs or label not in a.classes:
            continue
        limit = rule.class_factor * r["wait_mean"] + rule.class_slack
        classes.append(ClassCheck(label, int(r["jobs"]), float(a.classes[label]["wait_mean"]),
                                  float(r["wait_mean"]), limit))
    bad = sorted((c for c in classes if not c.ok), key=lambda c: -c.ratio)
    each = unit.removesuffix("s")
    failures = [f"{c.label}-{each} jobs wait {c.ratio:.2f}× {name}'s ({c.wait:.0f} s against "
                f"{c.reference:.0f} s)" for c in bad]
    p99_limit = max(rule.p99_factor * ref.wait_p99, ref.wait_p99 + rule.class_slack)
    if a.wait_p99 > p99_limit:
        failures.append(f"p99 wait {a.wait_p99:.0f} s against {name}'s {ref.wait_p99:.0f} s")
    for what, mine, ref_util in (("GPU utilisation", a.utilization, ref.utilization),
                                 ("GPU utilisation over the arrivals", a.utilization_arrival,
                                  ref.utilization_arrival)):
        if mine < ref_util - rule.util_slack:
            failures.append(f"{what} {mine:.3f} against {name}'s {ref_util:.3f}")
    paired: dict[str, Any] = {}
    pairs: tuple[tuple[str, tuple[float, ...], tuple[float, ...]], ...] = (
        ("bsld", a.bsld, ref.bsld), ("wait_mean", a.wait, ref.wait))
    for key, series, theirs in pairs:
        if len(series) >= 2 and len(series) == len(theirs):
            p = stats.paired(series, theirs, rule.sigma)
            paired[key] = {"diff": p.diff, "se": p.se, "verdict": p.verdict}
            if p.verdict == "higher":
                what = "mean BSLD" if key == "bsld" else "mean wait"
                failures.append(f"{what} higher than {name}'s ({p.diff:+.2f} ± {p.se:.2f} per window)")
    figures = {"wait_p99": a.wait_p99, "wait_p99_reference": ref.wait_p99, "wait_p99_limit": p99_limit,
               "utilization": a.utilization, "utilization_reference": ref.utilization,
               "utilization_arrival": a.utilization_arrival,
               "utilization_arrival_reference": ref.utilization_arrival, "paired": paired}
    return Judgement(tuple(failures), tuple(classes), tuple(c.label for c in bad), figures)
