"""What ``rltune site`` leaves in ``--out``: ``report.md`` (self-check, options, verdict), ``results.json``,
plots (wait CDF, BSLD per window, mean wait per size class), ``evaluation/`` (``rltune evaluate``'s own
results of the options) and ``rltune-daemon.toml``: the daemon configuration of the verdict, with
``recommended_by`` pointing back here, which ``rltune-daemon --check-config`` shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from rltune_daemon.evaluate.report import harm_table, markdown_table, size_table, slim_results, write_results
from rltune_daemon.evaluate.verdict import DEFAULT, LEAVE

FRAGMENT = "rltune-daemon.toml"


def daemon_fragment(choice: str, results_path: Path) -> str:
    """The daemon configuration that runs ``choice``, and where it came from."""
    lines = [f"# from `rltune site`: {results_path}", f'recommended_by = "{results_path}"']
    if choice in (LEAVE, DEFAULT, ""):
        lines += ['base_policy = "multifactor"  # leave Slurm\'s own order alone', 'model = ""']
    elif choice.startswith("daemon:"):
        lines += [f'base_policy = "{choice.removeprefix("daemon:")}"', 'model = ""']
    else:
        model = Path(choice.removeprefix("rltune:")).resolve()
        lines += ['base_policy = "multifactor"  # when the model cannot run', f'model = "{model}"']
    return "\n".join(lines) + "\n"


def fidelity_table(f: dict[str, Any]) -> str:
    d = f["default_formula"]
    rows = ["| | recorded | simulated, site's multifactor | simulated, default formula |",
            "|---|---|---|---|",
            f"| mean wait (s) | {f['wait_mean_recorded']:.0f} | {f['wait_mean_sim']:.0f} "
            f"({f['wait_rel_error']:+.1%}) | {d['wait_mean_sim']:.0f} ({d['wait_rel_error']:+.1%}) |",
            f"| start-order Spearman | 1 | {f['start_spearman']:.3f} | {d['start_spearman']:.3f} |"]
    for label, c in f["by_size"].items():
        gpus = f"{label} GPU{'' if label == '1' else 's'}"
        rows.append(f"| mean wait, {gpus} ({c['jobs']} jobs) | {c['wait_mean_recorded']:.0f} | "
                    f"{c['wait_mean_sim']:.0f} ({c['wait_rel_error']:+.1%}) | |")
    u = f["unplaceable"]
    rows.append(f"| jobs it could not place | | {u['at_load'] + u['in_simulation']} ({u['share']:.1%}) | |")
    return "\n".join(rows)


def write_site(site: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    results = site["evaluation"]
    paths = write_results(results, out / "evaluation", site["command"])
    paths.append(plot_by_size(results, out / "wait_by_size.png"))
    slim = {**site, "evaluation": slim_results(results, site["command"])}
    res_path = out / "results.json"
    res_path.write_text(json.dumps(slim, indent=2, sort_keys=True, default=str) + "\n")
    frag = out / FRAGMENT
    frag.write_text(daemon_fragment(site["verdict"]["choice"], res_path.resolve()))
    h, v = site["history"], site["verdict"]
    cfg = results["config"]
    md = [f"# Site check: {site['source']}", "", f"Command: `{site['command']}`", "",
          f"History: {h['jobs']} jobs that ran, over {h['days']:.1f} days, on {h['nodes']} nodes "
          f"({h['gpus']} GPUs), partitions {', '.join(h['partitions'])}.",
          "Left out: " + (", ".join(f"{k} {n}" for k, n in h["skipped"].items()) or "nothing") + ".",
          f"Slurm's delay from a job's end to the next start, measured on the older part: "
          f"{h['release_latency']:.2f} s (added to every simulated run time).", ""]
    md += [f"- {note}" for note in [*h["notes"], *site["priority"]["notes"]]]
    md += ["", "## Self-check: does the simulator reproduce this Slurm?", "",
           "The whole history simulated under the site's own multifactor (weights, PriorityMaxAge, "
           "PriorityFavorSmall, partition tiers and factors, backfill interval, a reservation for every "
           "job tested), against the starts Slurm recorded:", "", fidelity_table(site["fidelity"]), "",
           "## The options, on the recent part", "",
           f"{cfg['windows']} windows x {cfg['window_size']} jobs: the history's last jobs, end to end; "
           "QSSF's history and any fine-tuning use only the jobs before them.", "",
           markdown_table(results, LEAVE), ""]
    for extra in (size_table(results, "GPUs"), harm_table(results)):
        if extra:
            md += [extra, ""]
    md += ["## Verdict", "", v["line"], ""]
    if v["declined"]:
        md += [f"The self-check declines the change: {v['declined']}.", ""]
    md += [f"Daemon configuration for this verdict: `{FRAGMENT}` (copy its lines into "
           "/etc/rltune-daemon.toml; `rltune-daemon --check-config` shows where they came from).", "",
           "![wait CDF](evaluation/wait_cdf.png)", "", "![wait by size](wait_by_size.png)", ""]
    (out / "report.md").write_text("\n".join(md))
    return [out / "report.md", res_path, frag, *paths]


def plot_by_size(results: dict[str, Any], path: Path) -> Path:
    """Mean wait per job-size class, one bar group per class, one bar per option."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pols = results["policies"]
    labels = list(dict.fromkeys(c for p in pols.values() for c in p.get("wait_by_size", {})))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(len(pols), 1)
    x = np.arange(len(labels))
    for i, (name, p) in enumerate(pols.items()):
        ws = p.get("wait_by_size", {})
        ax.bar(x + i * width, [ws.get(c, {}).get("wait_mean", 0.0) for c in labels], width, label=name)
    ax.set_xticks(x + width * (len(pols) - 1) / 2, [f"{c} GPU{'' if c == '1' else 's'}" for c in labels])
    ax.set_ylabel("mean wait (s)")
    ax.set_title("mean wait by job size, recent windows")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

