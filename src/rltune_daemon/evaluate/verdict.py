"""The one line an admin wants from an evaluation: run the model, run the daemon without a model, or
leave Slurm alone.

The three options are Slurm's own multifactor order (``multifactor``: what the cluster does without the
daemon), the daemon applying a heuristic (``daemon:<heuristic>``, the best of those evaluated by mean
BSLD) and the daemon with a model (``rltune:<dir>``, likewise). An option is only recommended over a
simpler one when it is *better* on the same windows (no metric higher beyond 2 standard errors of the
per-window difference, one lower: ``stats.paired``); a tie or a trade-off keeps the simpler option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rltune_daemon import harm, stats

METRICS = (("bsld", "BSLD", "", 2), ("wait_mean", "wait", " s", 0))
LEAVE = "multifactor"
DEFAULT = "default"  # rltune evaluate's name for the daemon with no configuration


def _series(results: Mapping[str, Any], policy: str, key: str) -> list[float]:
    return [float(w[key]) for w in results["policies"][policy]["per_window"]]


def judge(results: Mapping[str, Any], a: str, b: str) -> tuple[str, str]:
    """``a`` against ``b``: the overall verdict and the per-metric differences, as text."""
    parts, verdicts = [], []
    for key, name, unit, digits in METRICS:
        p = stats.paired(_series(results, a, key), _series(results, b, key))
        verdicts.append(p.verdict)
        parts.append(f"{name} {p.diff:+.{digits}f} ± {p.se:.{digits}f}{unit} ({p.verdict})")
    return stats.overall(verdicts), ", ".join(parts)


def harm_of(results: Mapping[str, Any], policy: str) -> dict[str, Any] | None:
    """``policy``'s no-harm judgement against multifactor: the one its results carry, else judged here
    from its figures; None when the results predate the figures (not judged)."""
    pols = results["policies"]
    entry = pols[policy]
    if "no_harm" in entry:
        return dict(entry["no_harm"])
    if LEAVE not in pols or not (harm.has_figures(entry) and harm.has_figures(pols[LEAVE])):
        return None
    unit = "processors" if results.get("config", {}).get("resource") == "cpu" else "GPUs"
    return harm.judge(harm.Figures.from_entry(entry), harm.Figures.from_entry(pols[LEAVE]), unit).as_json()


def harm_text(judged: Mapping[str, Any] | None) -> str:
    if judged is None:
        return "no-harm figures not recorded"
    return "no harm" if judged["ok"] else "harm: " + "; ".join(judged["failures"])


def _pick(results: Mapping[str, Any], prefix: str, against: str) -> tuple[str, str, str, bool]:
    """Of the evaluated ``prefix`` policies, the one to weigh against ``against``: the lowest mean BSLD
    among those *better* than it that do no harm, else the lowest mean BSLD of all; with its verdict,
    the differences and the no-harm judgement as text, and whether it does no harm. ("", "", "", False)
    when none ran."""
    pols = results["policies"]
    mine = sorted((p for p in pols if (p.startswith(prefix) or (prefix == "daemon:" and p == DEFAULT))
                   and p != f"daemon:{LEAVE}"),
                  key=lambda p: (pols[p]["bsld"], pols[p]["wait_mean"]))
    judged = []
    for p in mine:
        v, text = judge(results, p, against)
        h = harm_of(results, p)
        judged.append((p, v, f"{text}; {harm_text(h)}", h is None or bool(h["ok"])))
    fallback = judged[0] if judged else ("", "", "", False)
    return next((j for j in judged if j[1] == "better" and j[3]), fallback)


def verdict(results: Mapping[str, Any]) -> str:
    """One line: which option to run on the evaluated workload and why, or "" when the evaluation
    cannot say (fewer than 2 windows; no multifactor, or nothing to compare with it)."""
    return decide(results)[1]


def decide(results: Mapping[str, Any]) -> tuple[str, str]:
    """The policy to run (``multifactor``, ``default``, ``daemon:<heuristic>`` or ``rltune:<dir>``; ""
    when the evaluation cannot say) and ``verdict``'s line."""
    pols = results["policies"]
    if not any((p.startswith(("daemon:", "rltune:")) or p == DEFAULT) and p != f"daemon:{LEAVE}"
               for p in pols):
        return "", ""
    if LEAVE not in pols:
        return "", ("verdict: add multifactor to --policies to judge the daemon against what Slurm does "
                    "without it")
    if len(pols[LEAVE]["per_window"]) < 2:
        return "", "verdict: needs at least 2 windows (--windows) to tell a gain from noise"
    choice, why = LEAVE, []
    for prefix in ("daemon:", "rltune:"):  # the simpler option first: a model must beat it
        policy, v, text, harmless = _pick(results, prefix, choice)
        if policy:
            why.append(f"{policy} vs {choice}: {v} ({text})")
            if v == "better" and harmless:
                choice = policy
    if choice == LEAVE:
        what = "leave Slurm alone (multifactor)"
    elif choice == DEFAULT:
        what = "the daemon's default (no configuration)"
    elif choice.startswith("daemon:"):
        what = f"the daemon without a model (base_policy = {choice.removeprefix('daemon:')})"
    else:
        what = f"the daemon with the model (model = {choice.removeprefix('rltune:')})"
    n = len(pols[LEAVE]["per_window"])
    return choice, f"verdict: {what}; {'; '.join(why)}; 2 standard errors over {n} windows"
