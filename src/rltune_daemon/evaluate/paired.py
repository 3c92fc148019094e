"""Is policy A really ahead of policy B on the same windows? A paired comparison with a tie band.

Two means over 30 windows differ in almost every run; whether that difference says anything depends on
how much the per-window differences scatter. Both policies ran on the same windows, so the difference
is taken window by window and judged against its standard error: *lower* below ``-sigma`` SE,
*higher* above ``+sigma`` SE, a *tie* in between. Choosing a model on a difference inside that band is
choosing on noise (docs/learning.md, "Choosing between two models").

``busiest`` keeps only the windows where a reference policy (run on the same windows, influenced by
neither side) has the highest BSLD: quiet windows, where every order scores alike, add noise to the
difference and nothing about the congested regime a held-out tail is in.

``relative`` takes each window's difference as a fraction of B's value there, ``(a - b) / b``, the
trainer's own reward scale: a window where every policy's BSLD is 20 then weighs no more than one where
it is 2, which the absolute difference lets a few congested windows decide.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rltune_daemon import harm, stats
from rltune_daemon.errors import UserError
from rltune_daemon.stats import SIGMA_DEFAULT

METRICS = ("bsld", "wait_mean")
# evaluation settings that must agree for two result files to hold the same windows
SAME_WINDOWS = ("trace", "split", "windows", "window_size", "seed", "estimates", "opts")


@dataclass(frozen=True)
class Side:
    """One policy's per-window results, from one ``results.json``."""

    path: Path
    policy: str
    config: dict[str, Any]
    windows: dict[int, dict[str, float]]
    entry: dict[str, Any] = field(default_factory=dict)  # the policy's whole entry in the results


@dataclass(frozen=True)
class PairedDiff:
    """Mean of ``a - b`` over the shared windows, its standard error and what it amounts to."""

    metric: str
    a: float
    b: float
    diff: float
    se: float
    verdict: str  # lower | higher | tie (a against b)


def load_side(spec: str) -> Side:
    """``RESULTS[#POLICY]``: a ``results.json`` (or the directory holding it) and one of its policies;
    the policy may be left out when the file holds only one."""
    raw, _, policy = spec.partition("#")
    path = Path(raw)
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(path.read_text())
        pols: dict[str, Any] = data["policies"]
        config: dict[str, Any] = data["config"]
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; give an 'rltune evaluate' results.json or its "
                        "directory") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not an 'rltune evaluate' results.json ({exc})") from None
    if not policy:
        if len(pols) != 1:
            raise UserError(f"{path} holds {len(pols)} policies ({', '.join(pols)}): name one as "
                            f"{raw}#POLICY")
        policy = next(iter(pols))
    if policy not in pols:
        raise UserError(f"{path}: no policy {policy!r}; it holds {', '.join(pols)}")
    per_window = pols[policy].get("per_window")
    if not per_window:
        raise UserError(f"{path}: policy {policy!r} has no per-window results; re-run 'rltune evaluate'")
    return Side(path, policy, config, {int(w["window"]): w for w in per_window}, dict(pols[policy]))


def check_same_windows(a: Side, b: Side) -> list[int]:
    """The window ids both sides ran, refusing results whose windows are not the same ones."""
    for key in SAME_WINDOWS:
        if a.config.get(key) != b.config.get(key):
            raise UserError(f"{a.path} and {b.path} differ in {key} ({a.config.get(key)!r} vs "
                            f"{b.config.get(key)!r}): compare results evaluated on the same windows")
    if set(a.windows) != set(b.windows):
        raise UserError(f"{a.path} and {b.path} hold different windows: compare results evaluated on the "
                        "same windows")
    if len(a.windows) < 2:
        raise UserError(f"{a.path}: a paired comparison needs at least 2 windows, it has {len(a.windows)}")
    return sorted(a.windows)


def _relative(x: float, y: float, metric: str, window: int) -> float:
    if y == 0.0:
        if x == 0.0:
            return 0.0
        raise UserError(f"window {window}: B's {metric} is 0, so A's relative difference is undefined; "
                        "compare without --relative")
    return (x - y) / y


def busiest(by: Side, ids: list[int], n: int, metric: str = "bsld") -> list[int]:
    """The ``n`` of ``ids`` (windows ``by`` ran too) where ``by`` has the highest ``metric`` (ties: lower
    window id first)."""
    if not 2 <= n <= len(ids):
        raise UserError(f"--busiest {n}: expected 2 to {len(ids)} (the windows both sides ran)")
    return sorted(sorted(ids, key=lambda i: (-float(by.windows[i][metric]), i))[:n])


def paired_diffs(a: Side, b: Side, metrics: tuple[str, ...] = METRICS, sigma: float = SIGMA_DEFAULT,
                 relative: bool = False, busiest_by: tuple[Side, int] | None = None) -> list[PairedDiff]:
    """Per metric: a's mean, b's mean, mean per-window difference (a fraction of B's when ``relative``),
    its standard error, the verdict; over all shared windows or, with ``busiest_by = (side, n)``, the
    ``n`` where that side's BSLD is highest."""
    if sigma <= 0:
        raise UserError(f"--sigma {sigma:g}: expected a positive number of standard errors")
    ids = check_same_windows(a, b)
    if busiest_by is not None:
        by, n = busiest_by
        check_same_windows(a, by)
        ids = busiest(by, ids, n)
    out = []
    for m in metrics:
        try:
            xs = [float(a.windows[i][m]) for i in ids]
            ys = [float(b.windows[i][m]) for i in ids]
        except KeyError:
            raise UserError(f"metric {m!r} is not in the per-window results; try one of "
                            f"{', '.join(sorted(a.windows[ids[0]]))}") from None
        rel = [_relative(x, y, m, i) for i, x, y in zip(ids, xs, ys, strict=True)] if relative else None
        p = stats.paired(xs, ys, sigma, diffs=rel)
        out.append(PairedDiff(m, p.a, p.b, p.diff, p.se, p.verdict))
    return out


def side_harm(a: Side, b: Side, sigma: float = SIGMA_DEFAULT) -> harm.Judgement | None:
    """Whether ``a`` does harm against ``b`` (``harm.judge``, ``b`` the reference) on their shared
    windows; None when either result predates the figures the criterion needs."""
    if not (harm.has_figures(a.entry) and harm.has_figures(b.entry)):
        return None
    check_same_windows(a, b)
    unit = "processors" if b.config.get("resource") == "cpu" else "GPUs"
    return harm.judge(harm.Figures.from_entry(a.entry), harm.Figures.from_entry(b.entry), unit,
                      harm.Rule(sigma=sigma), name=b.policy)


def overall(diffs: list[PairedDiff]) -> str:
    """``better`` (no metric higher, one lower), ``worse`` (the reverse), ``tie`` or ``trade-off``."""
    return stats.overall(d.verdict for d in diffs)
