"""Write evaluation results: ``results.json`` (stable keys), ``results.md`` and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from rltune_daemon.evaluate.recorded import settings_as_run
from rltune_daemon.evaluate.verdict import LEAVE, harm_of, harm_text, verdict
from rltune_daemon.traces.stats import dropped_note

TABLE_COLS = (("bsld", "BSLD", "{:.2f}"), ("wait_mean", "wait mean (s)", "{:.0f}"),
              ("wait_p95", "wait p95 (s)", "{:.0f}"), ("wait_p99", "wait p99 (s)", "{:.0f}"),
              ("wait_max", "wait max (s)", "{:.0f}"), ("jct_mean", "JCT mean (s)", "{:.0f}"),
              ("utilization", "GPU util", "{:.3f}"), ("utilization_arrival", "GPU util (arrivals)", "{:.3f}"),
              ("makespan", "makespan (s)", "{:.0f}"))


def markdown_table(results: dict[str, Any], baseline: str | None = None) -> str:
    """One row per policy; with ``baseline``, BSLD and wait change vs that policy in %."""
    pols = results["policies"]
    head = ["policy", *(c[1] for c in TABLE_COLS)]
    if baseline and baseline in pols:
        head += [f"BSLD vs {baseline}", f"wait vs {baseline}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in pols.items():
        row = [f"`{name}`", *(fmt.format(m[key]) if key in m else "-" for key, _, fmt in TABLE_COLS)]
        if baseline and baseline in pols:
            b = pols[baseline]
            row += [_pct(m["bsld"], b["bsld"]), _pct(m["wait_mean"], b["wait_mean"])]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def window_wins(results: dict[str, Any], name: str) -> list[tuple[str, int, int, int]]:
    """For policy ``name`` against every other policy: (other, windows with lower BSLD, windows with
    lower mean wait, windows compared). A mean over ten windows can hang on one bad window; this shows
    whether a lead is broad or rests on a few windows."""
    pols = results["policies"]
    mine = {w["window"]: w for w in pols[name]["per_window"]}
    rows = []
    for other, m in pols.items():
        if other == name:
            continue
        pairs = [(mine[w["window"]], w) for w in m["per_window"] if w["window"] in mine]
        rows.append((other, sum(a["bsld"] < b["bsld"] for a, b in pairs),
                     sum(a["wait_mean"] < b["wait_mean"] for a, b in pairs), len(pairs)))
    return rows


def wins_table(results: dict[str, Any], name: str) -> str:
    lines = [f"| `{name}` vs | windows with lower BSLD | windows with lower mean wait |", "|---|---|---|"]
    for other, bsld, wait, n in window_wins(results, name):
        lines.append(f"| `{other}` | {bsld}/{n} | {wait}/{n} |")
    return "\n".join(lines)


def hurt_table(judged: dict[str, dict[str, float]]) -> str:
    lines = ["| policy | jobs hurt | jobs helped | worst extra wait (s) |", "|---|---|---|---|"]
    for name, j in judged.items():
        lines.append(f"| `{name}` | {j['hurt_pct']:.1f} % | {j['helped_pct']:.1f} % | "
                     f"{j['worst_extra_wait']:.0f} |")
    return "\n".join(lines)


def harm_table(results: dict[str, Any]) -> str:
    """The no-harm criterion of every policy against multifactor, one line each ("" without
    multifactor or figures)."""
    rows = [(name, harm_of(results, name)) for name in results["policies"] if name != LEAVE]
    rows = [(name, h) for name, h in rows if h is not None]
    if not rows:
        return ""
    lines = ["| policy | against multifactor |", "|---|---|"]
    for name, h in rows:
        lines.append(f"| `{name}` | {harm_text(h)} |")
    return ("No harm against Slurm's multifactor order (every size class with at least 50 jobs waits at "
            "most 1.1 × its mean + 60 s, p99 wait at most 1.1 ×, GPU utilisation over the makespan and "
            "over the arrivals at most 0.01 lower, mean BSLD and wait not higher beyond 2 standard "
            "errors):\n\n" + "\n".join(lines))


def size_table(results: dict[str, Any], unit: str) -> str:
    """Mean wait (s) by job size, one column per size class any policy ran."""
    rows = {k: v.get("wait_by_size", {}) for k, v in results["policies"].items()}
    labels = list(dict.fromkeys(label for r in rows.values() for label in r))
    if not labels:
        return ""
    # every policy runs the same jobs; results merged from runs that lack a class still count it
    jobs = {label: max(r.get(label, {}).get("jobs", 0) for r in rows.values()) for label in labels}
    head = " | ".join(f"{label} ({jobs[label]} jobs)" for label in labels)
    lines = [f"| policy | {head} |", "|---|" + "---|" * len(labels)]
    for name, r in rows.items():
        cells = " | ".join(f"{r[label]['wait_mean']:.0f}" if label in r else "-" for label in labels)
        lines.append(f"| `{name}` | {cells} |")
    return f"Mean wait (s) by job size ({unit} requested; jobs over all windows):\n\n" + "\n".join(lines)


def _pct(x: float, base: float) -> str:
    return f"{100.0 * (x - base) / base:+.1f}%" if base else "n/a"


def _interval(cfg: dict[str, Any]) -> str:
    if cfg["mode"] != "daemon":
        return ""
    run = settings_as_run(cfg)
    guard = run["starvation_seconds"]
    guard_text = "off" if guard == "off" else f"{float(guard) / 3600:g} h"
    slots = int(run["starvation_slots"])
    stretch = float(run["starvation_stretch"])
    if stretch and guard != "off":
        guard_text += f" or {stretch:g} × time limit"
    if slots and guard != "off":
        guard_text += f", {slots} restored at a time"
    reference = str(run["starvation_reference"])
    if reference != "priority" and guard != "off":
        guard_text += ", measured against " + ("submit order" if reference == "submit" else
                                               "multifactor or submit order")
    interval, react = float(run["interval"]), float(run["react"])
    watch = f" and {react:g} s after a queue change" if 0 < react < interval else ""
    return f" (re-planned every {interval:g} s{watch}, starvation guard {guard_text})"


def _backfill(cfg: dict[str, Any]) -> str:
    n = int(settings_as_run(cfg)["bf_reservations"])
    return "" if n == 1 else f", backfill reserves for the first {n} blocked jobs per partition (not EASY)"


def fallback_note(results: dict[str, Any]) -> str | None:
    """One line naming the policies whose placement MILP fell back to the greedy placer, or None: those
    decisions were not the MILP's, which a reader of the table should know (results written before the
    count existed have none)."""
    parts = []
    for name, m in results["policies"].items():
        counts = {r: n for r, n in m.get("milp_fallbacks", {}).items() if n}
        if counts:
            parts.append(f"`{name}` " + ", ".join(f"{n} {r}" for r, n in counts.items()))
    if not parts:
        return None
    return ("Placement MILP fell back to the greedy placer: " + "; ".join(parts) + " (those decisions "
            "used Slurm's default placement; docs/placement.md).")


def load_line(cfg: dict[str, Any]) -> str:
    """What the windows were cut from: the requested-time model that ran and the jobs dropped when the
    trace was loaded, by reason (results written before these were recorded say only the model)."""
    estimates = cfg.get("estimates_note") or cfg["estimates_used"]
    if "dropped_at_load" not in cfg:
        return f"requested times: {estimates}"
    dropped = dropped_note(cfg["dropped_at_load"], int(cfg["jobs_loaded"]))
    return f"requested times: {estimates}; jobs dropped at load: {dropped}"


SPLIT_TEXT = {"held-out": "held-out last 10 %", "train": "training part (first 90 %)",
              "train-tail": "training part's tail (81-90 %, temporal validation)",
              "train-recent": "training part's last jobs, disjoint windows end to end",
              "all": "whole trace (nothing held out)"}


def slim_results(results: dict[str, Any], command: str) -> dict[str, Any]:
    """results.json's content: the results without every job's wait, with the command that made them."""
    return {"policies": {k: {kk: vv for kk, vv in v.items() if kk != "waits"}
                         for k, v in results["policies"].items()},
            "config": {**results["config"], "command": command}}


def write_results(results: dict[str, Any], out: Path, command: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    slim = slim_results(results, command)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(slim, indent=2, sort_keys=True) + "\n")
    cfg = results["config"]
    first = next(iter(results["policies"]), None)
    md = [f"# Evaluation: {cfg['trace']}", "", f"Command: `{command}`", "",
          f"{cfg['windows']} windows x {cfg['window_size']} jobs from the "
          f"{SPLIT_TEXT.get(str(cfg.get('split')), SPLIT_TEXT['held-out'])} "
          f"(seed {cfg['seed']}), learned-policy mode: "
          f"{cfg['mode']}{_interval(cfg)}, placement effects: {'off' if cfg['pure'] else 'on'}"
          f"{_backfill(cfg)}. Means over windows.", "", load_line(cfg) + ".", "",
          markdown_table(results, baseline="fcfs" if "fcfs" in results["policies"] else first), "",
          "Wait max is the longest wait of any job in any window; wait p99 is over every job of every "
          "window; GPU util (arrivals) counts only the span from the first to the last submit.", ""]
    note = fallback_note(results)
    if note:
        md += [note, ""]
    if line := verdict(results):
        md += [line, ""]
    if sizes := size_table(results, "processors" if cfg.get("resource") == "cpu" else "GPUs"):
        md += [sizes, ""]
    if harms := harm_table(results):
        md += [harms, ""]
    judged = {k: v["vs_multifactor"] for k, v in results["policies"].items() if "vs_multifactor" in v}
    if judged:
        md += ["Job by job against Slurm's multifactor order on the same windows (hurt / helped: waited "
               "more than 10 minutes longer / shorter):", "", hurt_table(judged), ""]
    for name in results["policies"]:
        if name.startswith("rltune:") and len(results["policies"]) > 1:
            md += [f"Window by window, `{name}` against each other policy:", "",
                   wins_table(results, name), ""]
    paths[1].write_text("\n".join(md))
    paths += plot_results(results, out)
    return paths


def plot_results(results: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    pols = results["policies"]
    trace = results["config"]["trace"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, m in pols.items():
        w = np.sort(np.asarray(m["waits"], dtype=float))
        if len(w):
            ax.step(np.maximum(w, 1.0), np.arange(1, len(w) + 1) / len(w), where="post", label=name)
    ax.set_xscale("log")
    cdf = _finish(fig, ax, "wait time (s, waits under 1 s drawn at 1 s)", "fraction of jobs",
                  f"{trace}: wait-time CDF over all windows", out / "wait_cdf.png")

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, m in pols.items():
        xs = [w["window"] for w in m["per_window"]]
        ax.plot(xs, [w["bsld"] for w in m["per_window"]], marker="o", label=name)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # windows are numbered
    per = _finish(fig, ax, "window", "mean bounded slowdown (log)", f"{trace}: BSLD per window",
                  out / "bsld_per_window.png")
    return [cdf, per]


def _finish(fig: Any, ax: Any, xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    """Labels, grid and legend as every results plot has them; saved to ``path`` and closed."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)  # off the data
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
