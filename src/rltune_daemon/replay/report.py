"""results.json (``rltune evaluate``'s schema plus ``simulated``, ``fidelity``, ``placement`` and the
per-job times), results.md and the plots of a replay."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rltune_daemon.evaluate.runner import METRIC_KEYS, no_harm
from rltune_daemon.formats.slurm import expand_hostlist
from rltune_daemon.harm import wait_by_class
from rltune_daemon.replay import fidelity as fid
from rltune_daemon.replay.arms import NOHINTS, REFERENCE, Arm
from rltune_daemon.replay.daemon_arm import scaled_cycle, trace_cycle
from rltune_daemon.replay.scaling import conf_overrides
from rltune_daemon.replay.simulate import describe as sim_describe

if TYPE_CHECKING:
    from rltune_daemon.replay.run import ArmRun, ReplayConfig, SeedResult

BIG_GPUS = 4  # jobs this large need a whole P100 node (or two nodes): what fragmentation delays


def expand_nodes(text: str) -> set[str]:
    """Slurm host list -> names; an unreadable list counts as no nodes."""
    try:
        return set(expand_hostlist(text))
    except ValueError:
        return set()


def real_arrays(run: ArmRun, res: SeedResult, speedup: float) -> dict[str, np.ndarray]:
    """Per trace job (window order): Slurm's submit/start/end in trace seconds after the first submit
    (NaN where a job has no such time), from the ids the replay recorded."""
    jobs = res.window.window.jobs
    by_trace = {s.trace_id: run.times.get(s.job_id) for s in run.submitted}
    sub, start, end = (np.full(len(jobs), np.nan) for _ in range(3))
    t_first = min((t.submit for t in run.times.values() if t.submit is not None), default=run.t0)
    for i, j in enumerate(jobs):
        t = by_trace.get(j.id)
        if t is None:
            continue
        for arr, val in ((sub, t.submit), (start, t.start), (end, t.end)):
            if val is not None:
                arr[i] = (val - t_first) * speedup
    return {"submit": sub, "start": start, "end": end}


def _job_arrays(res: SeedResult) -> tuple[np.ndarray, np.ndarray]:
    jobs = res.window.window.jobs
    return (np.array([float(j.runtime or 0.0) for j in jobs]), np.array([float(j.gpus) for j in jobs]))


def _metrics_real(run: ArmRun, res: SeedResult, speedup: float) -> dict[str, Any]:
    a = real_arrays(run, res, speedup)
    runtime, gpus = _job_arrays(res)
    m = fid.metrics(a["submit"], a["start"], runtime, gpus, res.window.window.cluster.total_gpus)
    ran = ~np.isnan(a["start"]) & ~np.isnan(a["end"])
    overhead = (a["end"] - a["start"] - runtime)[ran]
    m["makespan_slurm_end"] = float(np.nanmax(a["end"]) - np.nanmin(a["submit"])) if ran.any() else 0.0
    m["run_overhead_mean"] = float(overhead.mean()) if len(overhead) else 0.0
    big = gpus >= BIG_GPUS
    w = a["start"] - a["submit"]
    m["wait_mean_ge4gpu"] = float(np.nanmean(w[big])) if big.any() else math.nan
    return m


def _metrics_sim(sim: Any, res: SeedResult) -> dict[str, Any]:
    runtime, gpus = _job_arrays(res)
    submit = np.array([j.submit for j in res.window.window.jobs])
    m = fid.metrics(submit, sim.start, runtime, gpus, res.window.window.cluster.total_gpus)
    big = gpus >= BIG_GPUS
    m["wait_mean_ge4gpu"] = float(np.nanmean((sim.start - submit)[big])) if big.any() else math.nan
    return m


def _hints(run: ArmRun) -> dict[str, int]:
    """Jobs Slurm showed with an ExcNodeList while pending; of those that started with it still set
    (the last poll before the start showed it), how many ran outside the excluded nodes (honoured)."""
    hinted = [t for t in run.times.values() if t.ever_excluded]
    started = [t for t in hinted if t.nodes and t.excluded]
    honoured = sum(1 for t in started if not (expand_nodes(t.nodes) & expand_nodes(t.excluded)))
    return {"hinted_jobs": len(hinted), "hinted_started": len(started), "honoured": honoured}


def _waits(a: dict[str, np.ndarray]) -> list[float]:
    """Per job of a window, Slurm's wait (NaN for a job that never started)."""
    return [float(x) for x in a["start"] - a["submit"]]


def _pooled(waits: list[float], sizes: list[float]) -> dict[str, Any]:
    """Over every job of every seed: the mean wait per size class and the p99 wait (the no-harm
    criterion's figures)."""
    w = np.asarray(waits, dtype=float)
    ran = w[~np.isnan(w)]
    return {"wait_by_size": wait_by_class(w, np.asarray(sizes, dtype=np.int64)),
            "wait_p99": float(np.percentile(ran, 99)) if len(ran) else 0.0}


def _aggregate(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [*METRIC_KEYS, "wait_mean_ge4gpu"]
    entry: dict[str, Any] = {}
    for k in keys:
        vals = [m[k] for m in per_seed if k in m and not math.isnan(m[k])]
        entry[k] = float(np.max(vals) if k == "wait_max" else np.mean(vals)) if vals else math.nan
    return entry


def build_results(cfg: ReplayConfig, arms: tuple[Arm, ...], results: list[SeedResult], wall: float
                  ) -> dict[str, Any]:
    s = cfg.speedup
    real: dict[str, Any] = {}
    sim: dict[str, Any] = {}
    fidelity: dict[str, Any] = {}
    placement: dict[str, Any] = {}
    per_job: dict[str, Any] = {}
    runs: list[dict[str, Any]] = []
    seed_real: dict[int, dict[str, Any]] = {}
    seed_sim: dict[int, dict[str, Any]] = {}
    for arm in arms:
        rows_r, rows_s, fids, waits, hint_rows = [], [], [], [], []
        per_job[arm.spec] = {}
        for res in results:
            run, sr = res.real[arm.spec], res.sim[arm.spec]
            mr, ms = _metrics_real(run, res, s), _metrics_sim(sr, res)
            a = real_arrays(run, res, s)
            rows_r.append({"window": res.seed, **mr})
            rows_s.append({"window": res.seed, **ms})
            seed_real.setdefault(res.seed, {})[arm.spec] = mr
            seed_sim.setdefault(res.seed, {})[arm.spec] = ms
            f = fid.arm_fidelity(mr, ms, a["start"], sr.start)
            fids.append({"seed": res.seed, **f})
            w = a["start"] - a["submit"]
            waits += [float(x) for x in w if not math.isnan(x)]
            hint_rows.append({"seed": res.seed, **_hints(run)})
            by_trace = {x.trace_id: x.job_id for x in run.submitted}
            seen = {t: run.times[i] for t, i in by_trace.items() if i in run.times}
            per_job[arm.spec][str(res.seed)] = [
                {"trace_id": j.id, "job_id": by_trace.get(j.id, ""), "gpus": j.gpus,
                 "trace_submit": j.submit, "runtime": j.runtime,
                 "submit": _num(a["submit"][i]), "start": _num(a["start"][i]), "end": _num(a["end"][i]),
                 "sim_start": _num(float(sr.start[i])),
                 "nodes": seen[j.id].nodes if j.id in seen else "",
                 "excluded": seen[j.id].excluded if j.id in seen else ""}
                for i, j in enumerate(res.window.window.jobs)]
            runs.append({"arm": arm.spec, "seed": res.seed, "jobs": len(res.window.window.jobs),
                         "submitted": len(run.submitted),
                         "finished": sum(1 for t in run.times.values() if t.finished),
                         "wall_seconds": run.wall_seconds, "daemon_rc": run.daemon_rc, "polls": run.polls,
                         "left_in_queue": run.left_in_queue, "daemon_counts": run.daemon_counts,
                         "notes": run.notes,
                         "submission_sequence": [" ".join(x.argv) for x in run.submitted]})
        sizes = [float(j.gpus) for res in results for j in res.window.window.jobs]
        real_waits = [w for res in results for w in _waits(real_arrays(res.real[arm.spec], res, s))]
        sim_waits = [float(st - j.submit) for res in results
                     for j, st in zip(res.window.window.jobs, res.sim[arm.spec].start, strict=True)]
        real[arm.spec] = {**_aggregate(rows_r), "per_window": rows_r, "waits": waits,
                          **_pooled(real_waits, sizes)}
        sim[arm.spec] = {**_aggregate(rows_s), "per_window": rows_s, **_pooled(sim_waits, sizes)}
        fidelity[arm.spec] = fid.summarize_seeds(fids)
        if arm.uses_daemon:
            counts = ("hinted_jobs", "hinted_started", "honoured")
            writes = [res.real[arm.spec].daemon_counts for res in results]
            placement[arm.spec] = {"hints": arm.hints, "per_seed": hint_rows,
                                   **{k: sum(r[k] for r in hint_rows) for k in counts},
                                   "exc_node_writes": sum(w.get("hints_set", 0) for w in writes),
                                   "site_factor_writes": sum(w.get("priority_updates", 0) for w in writes),
                                   "wait_mean_ge4gpu_real": real[arm.spec]["wait_mean_ge4gpu"],
                                   "wait_mean_ge4gpu_sim": sim[arm.spec]["wait_mean_ge4gpu"]}
    _moved(placement, per_job)
    for side in (real, sim):  # the criterion every evaluation reports, on Slurm's own times and the sim's
        if REFERENCE in side:
            for name, entry in side.items():
                if name != REFERENCE:
                    entry["no_harm"] = no_harm(entry, side[REFERENCE])
    # signs: per seed, and on the means over seeds
    for arm_spec, agree in fid.sign_agreement(
            {a: {k: real[a][k] for k in ("wait_mean", "bsld")} for a in real},
            {a: {k: sim[a][k] for k in ("wait_mean", "bsld")} for a in sim}).items():
        fidelity[arm_spec].update(agree)
        fidelity[arm_spec]["sign_agrees_per_seed"] = [
            fid.sign_agreement(seed_real[sd], seed_sim[sd]).get(arm_spec, {}).get("sign_agrees")
            for sd in sorted(seed_real)]
    weights = results[0].real[arms[0].spec].weights if results else None
    config = {
        "trace": cfg.trace, "window_size": cfg.window_size, "seeds": list(cfg.seeds), "speedup": s,
        "arms": [a.spec for a in arms], "cluster": cfg.cluster, "partition": cfg.partition or "gpu",
        "accounting": cfg.accounting, "estimates": cfg.estimates, "opts": cfg.opts, "split": cfg.split,
        "scaled_slurm_conf": conf_overrides(s) if cfg.cluster == "local" else {},
        "cluster_priority": vars(weights) if weights is not None else {},
        "simulator": {**sim_describe(trace_cycle(s)), "passes": cfg.passes,
                      "pass_period": results[0].real[arms[0].spec].pass_period if results else 0.0},
        "bf_interval": (results[0].real[arms[0].spec].pass_period / s if results and s else 0.0) or 1.0,
        "reference": REFERENCE, "wall_seconds": wall,
        "daemon": dict(zip(("interval_real", "react_real"), scaled_cycle(s), strict=True)),
        "notes": sorted({n for r in results for run in r.real.values() for n in run.notes}),
    }
    return {"policies": real, "simulated": sim, "fidelity": fidelity, "placement": placement,
            "config": config, "runs": runs, "per_job": per_job}


def _moved(placement: dict[str, Any], per_job: dict[str, Any]) -> None:
    """For an arm with hints and its ``/nohints`` twin: of the jobs Slurm held with an ExcNodeList, how
    many ran on other nodes than the same job without hints (where the hint changed the placement)."""
    for arm, entry in placement.items():
        twin = f"{arm}{NOHINTS}"
        if not entry["hints"] or twin not in per_job:
            continue
        moved = compared = 0
        for seed, rows in per_job[arm].items():
            other = {r["trace_id"]: r["nodes"] for r in per_job[twin].get(seed, [])}
            for r in rows:
                if r["excluded"] and r["nodes"] and other.get(r["trace_id"]):
                    compared += 1
                    moved += expand_nodes(r["nodes"]) != expand_nodes(other[r["trace_id"]])
        entry["hinted_vs_nohints"] = {"arm": twin, "compared": compared, "other_nodes": moved}


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(float(x), 3)


def _f(x: Any, fmt: str = ".0f") -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def markdown(data: dict[str, Any]) -> str:
    cfg = data["config"]
    pols, sims, fids = data["policies"], data["simulated"], data["fidelity"]
    lines = [f"# Replay: {cfg['trace']}, {cfg['window_size']} jobs, seeds {cfg['seeds']}, speedup "
             f"{cfg['speedup']:g} ({cfg['cluster']} cluster)", "",
             f"Wall time {cfg['wall_seconds'] / 60:.1f} min. Times in trace seconds "
             "(real seconds x speedup).",
             "", "## Real Slurm (mean over seeds)", "",
             "| arm | BSLD | wait mean (s) | wait p99 (s) | JCT mean (s) | GPU util | GPU util (arrivals) | "
             "makespan (s) | wait ≥4-GPU jobs (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    ref = pols.get(REFERENCE)
    for name, m in pols.items():
        d = ""
        if ref and name != REFERENCE:
            d = f" ({(m['wait_mean'] / ref['wait_mean'] - 1) * 100:+.1f} %)" if ref["wait_mean"] else ""
        lines.append(f"| {name} | {_f(m['bsld'], '.2f')} | {_f(m['wait_mean'])}{d} | "
                     f"{_f(m.get('wait_p99'))} | {_f(m['jct_mean'])} | {_f(m['utilization'], '.3f')} | "
                     f"{_f(m.get('utilization_arrival'), '.3f')} | {_f(m['makespan'])} | "
                     f"{_f(m['wait_mean_ge4gpu'])} |")
    lines += _harm_lines(pols)
    lines += ["", "## Fidelity: simulator vs real", "",
              "| arm | wait real | wait sim | wait error | BSLD real | BSLD sim | start Spearman (min) | "
              "sign vs multifactor |", "|---|---|---|---|---|---|---|---|"]
    for name, f in fids.items():
        sign = "–" if name == REFERENCE else ("yes" if f.get("sign_agrees") else "NO")
        lines.append(f"| {name} | {_f(f['wait_mean_real'])} | {_f(f['wait_mean_sim'])} | "
                     f"{f['wait_rel_error'] * 100:+.1f} % | {_f(f['bsld_real'], '.2f')} | "
                     f"{_f(f['bsld_sim'], '.2f')} | "
                     f"{_f(f['start_spearman'], '.3f')} ({_f(f['start_spearman_min'], '.3f')}) | {sign} |")
    lines += ["", "Per seed: wait error / Spearman", ""]
    for name, f in fids.items():
        cells = ", ".join(f"seed {r['seed']}: {r['wait_rel_error'] * 100:+.1f} % / {r['start_spearman']:.3f}"
                          for r in f["per_seed"])
        lines.append(f"* {name}: {cells}")
    if data["placement"]:
        lines += ["", "## Placement hints (ExcNodeList as Slurm showed it on pending jobs)", "",
                  "| arm | hints | ExcNodeList writes | hinted jobs | started | "
                  "ran outside the excluded nodes | wait ≥4-GPU real | sim |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, p in data["placement"].items():
            lines.append(f"| {name} | {'on' if p['hints'] else 'off'} | {p['exc_node_writes']} | "
                         f"{p['hinted_jobs']} | "
                         f"{p['hinted_started']} | {p['honoured']} | {_f(p['wait_mean_ge4gpu_real'])} | "
                         f"{_f(p['wait_mean_ge4gpu_sim'])} |")
        for name, p in data["placement"].items():
            if "hinted_vs_nohints" in p:
                h = p["hinted_vs_nohints"]
                lines.append(f"\n{name}: of {h['compared']} jobs started with an ExcNodeList, "
                             f"{h['other_nodes']} ran on other nodes than the same job in {h['arm']}.")
    lines += ["", "## Simulated (same windows)", "",
              "| arm | BSLD | wait mean (s) | GPU util | makespan (s) |", "|---|---|---|---|---|"]
    for name, m in sims.items():
        lines.append(f"| {name} | {_f(m['bsld'], '.2f')} | {_f(m['wait_mean'])} | "
                     f"{_f(m['utilization'], '.3f')} | {_f(m['makespan'])} |")
    if cfg["notes"]:
        lines += ["", "Notes:", *[f"* {n}" for n in cfg["notes"]]]
    return "\n".join(lines) + "\n"


def _harm_lines(pols: dict[str, Any]) -> list[str]:
    """The no-harm criterion against multifactor on Slurm's own times, and the wait per size class."""
    judged = {name: m["no_harm"] for name, m in pols.items() if "no_harm" in m}
    if not judged:
        return []
    labels = list(dict.fromkeys(k for m in pols.values() for k in m.get("wait_by_size", {})))
    out = ["", "No harm against multifactor (every size class with at least 50 jobs waits at most 1.1 × its "
           "mean + 60 s, p99 wait at most 1.1 ×, GPU utilisation at most 0.01 lower over the makespan and "
           "over the arrivals, BSLD and wait not higher beyond 2 standard errors over the seeds):", ""]
    out += [f"* {name}: " + ("no harm" if h["ok"] else "harm: " + "; ".join(h["failures"]))
            for name, h in judged.items()]
    out += ["", "Mean wait (s) per size class (GPUs; jobs of all seeds):", "",
            "| arm | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for name, m in pols.items():
        cls = m.get("wait_by_size", {})
        out.append(f"| {name} | " + " | ".join(_f(cls[k]["wait_mean"]) if k in cls else "–" for k in labels)
                   + " |")
    return out


def write_results(out: Path, data: dict[str, Any], results: list[SeedResult]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(_clean(data), indent=1, default=_json_default, allow_nan=False))
    paths[1].write_text(markdown(data))
    with contextlib.suppress(ImportError):  # matplotlib missing: the numbers still stand
        paths += plot(out, data)
    return paths


def _clean(x: Any) -> Any:
    """NaN/inf (an arm without ≥4-GPU jobs, an undefined correlation) as JSON null."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (float, np.floating)) and not math.isfinite(float(x)):
        return None
    return x


def _json_default(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON: {type(x).__name__}")


def busy_gpus(start: np.ndarray, runtime: np.ndarray, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function of allocated GPUs over time (x: event times in hours)."""
    ok = ~np.isnan(start)
    t = np.concatenate([start[ok], start[ok] + runtime[ok]])
    d = np.concatenate([gpus[ok], -gpus[ok]])
    order = np.lexsort((d, t))  # at one instant ends before starts: Slurm's 1-s clock puts both there
    return t[order] / 3600.0, np.cumsum(d[order])


def plot(out: Path, data: dict[str, Any]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    paths: list[Path] = []
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for i, (name, m) in enumerate(data["policies"].items()):
        color = f"C{i}"
        w = np.sort(np.asarray(m["waits"], dtype=float))
        if len(w):
            ax.step(np.maximum(w, 1.0), np.arange(1, len(w) + 1) / len(w), where="post", color=color,
                    label=f"{name} (real)")
        sw = [j["sim_start"] - j["trace_submit"] for rows in data["per_job"][name].values() for j in rows
              if j["sim_start"] is not None]
        sims = np.sort(np.asarray([max(x, 1.0) for x in sw]))
        if len(sims):
            ax.step(sims, np.arange(1, len(sims) + 1) / len(sims), where="post", color=color, ls="--",
                    alpha=0.7, label=f"{name} (sim)")
    ax.set_xscale("log")
    ax.set_xlabel("wait (trace seconds; under 1 s drawn at 1 s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"replay {data['config']['trace']}: wait CDF, real (solid) vs simulator (dashed)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    paths.append(out / "wait_cdf.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    arms = list(data["policies"])
    seed = str(data["config"]["seeds"][0])
    fig, axes = plt.subplots(len(arms), 1, figsize=(9, 2.2 * len(arms) + 0.5), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], arms, strict=True):
        rows = data["per_job"][name][seed]
        gpus = np.array([r["gpus"] for r in rows], dtype=float)
        start = np.array([np.nan if r["start"] is None else r["start"] for r in rows])
        end = np.array([np.nan if r["end"] is None else r["end"] for r in rows])
        x, y = busy_gpus(start, end - start, gpus)
        ax.step(x, y, where="post", label="real (Slurm start/end)")
        sim_start = np.array([np.nan if r["sim_start"] is None else r["sim_start"] for r in rows])
        runtime = np.array([float(r["runtime"] or 0.0) for r in rows])
        sx, sy = busy_gpus(sim_start, runtime, gpus)
        ax.step(sx, sy, where="post", ls="--", alpha=0.7, label="simulator")
        ax.set_ylabel("busy GPUs")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"{name} (seed {seed})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[-1, 0].set_xlabel("trace hours since the first submit")
    fig.tight_layout()
    paths.append(out / "busy_gpus.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths
