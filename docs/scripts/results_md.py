"""Print the tables of docs/results.md from the evaluation outputs under docs/results/.

Usage: .venv/bin/python docs/scripts/results_md.py [--summary]   (after docs/scripts/results.sh)
Every number comes from a results.json written by ``rltune evaluate``; the command is printed with it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from functools import cache
from pathlib import Path

from rltune_daemon.evaluate.paired import PairedDiff
from rltune_daemon.evaluate.recorded import settings_as_run
from rltune_daemon.evaluate.report import hurt_table, window_wins
from rltune_daemon.features import ACTOR_SLOTS

ROOT = Path(__file__).resolve().parents[1] / "results"
REPO = ROOT.parents[1]
EARLIER = " (earlier model)"
TRACES = ("philly", "helios", "alibaba", "testbed")
PAPER_VS_FCFS = {"philly": "82.1 %", "helios": "53.5 %", "alibaba": "50.1 %"}
PAPER_VS_MULTIFACTOR = {"philly": "71.5 %", "helios": "81.2 %"}


def load(name: str) -> dict | None:  # type: ignore[type-arg]
    path = ROOT / name / "results.json"
    return json.loads(path.read_text()) if path.is_file() else None


def digest(actor: Path) -> str:
    """An actor file's hash as evaluate records it (``config.models[spec].actor_sha256``)."""
    return hashlib.sha256(actor.read_bytes()).hexdigest()[:16]


def dagger(name: str, res: dict | None) -> str:  # type: ignore[type-arg]
    """" †" after a learned policy's cell measured with an earlier actor than its directory holds now."""
    return " †" if res is not None and name.startswith("rltune:") and earlier(res) else ""


def trainer_heldout(policy: str) -> str:
    """"BSLD / wait" of the trainer's own held-out run, recorded in a model's manifest ("-" if none)."""
    manifest = REPO / policy.removeprefix("rltune:") / "manifest.json"
    m = json.loads(manifest.read_text()) if manifest.is_file() else {}
    h = m.get("heldout") or {}
    if not h:
        return "-"
    seed = h.get("seed", 0)  # the trainer draws its held-out windows with the training seed
    windows = f" (seed-{seed} windows; {m['base_policy']} {h['base']['bsld']:.2f})" if seed else ""
    return f"{h['model']['bsld']:.2f} / {h['model']['wait_mean']:.0f}{windows}"


def earlier(res: dict) -> bool:  # type: ignore[type-arg]
    """True when a learned policy in ``res`` was measured with another actor file than the one now in
    its model directory (evaluate records each actor's hash; the directory may since have been
    retrained or removed). Such rows are kept, labelled, where they document a choice made then."""
    for spec, ident in res["config"].get("models", {}).items():
        actor = REPO / spec.partition(":")[2] / "actor.pt"
        now = digest(actor) if actor.is_file() else ""
        if now != ident["actor_sha256"]:
            return True  # retrained since, or no longer shipped
    return False


def shipped(res: dict) -> bool:  # type: ignore[type-arg]
    """True when every learned policy in ``res`` was measured with an actor file now in ``models/``."""
    ours = {digest(a) for a in (REPO / "models").glob("*/actor.pt")}
    return all(i["actor_sha256"] in ours for i in res["config"].get("models", {}).values())


def heuristics(pols: dict, learned_name: str) -> dict:  # type: ignore[type-arg]
    """The seven baselines ranked at every event (not the learned policy, not ``daemon:`` rows)."""
    return {k: v for k, v in pols.items() if k != learned_name and not k.startswith("daemon:")}


def wait_max(m: dict) -> str:  # type: ignore[type-arg]
    return f"{m['wait_max']:.0f}" if "wait_max" in m else "n/a"


def bsld_wait(m: dict | None) -> tuple[str, str]:  # type: ignore[type-arg]
    """A policy's mean BSLD and wait as table cells; "-" for a policy the run did not measure."""
    return (f"{m['bsld']:.2f}", f"{m['wait_mean']:.0f}") if m else ("-", "-")


def pct(new: float, old: float) -> str:
    return f"{(new - old) / old * 100:+.1f} %" if old else "n/a"


def paper(table: dict[str, str], trace: str) -> str:
    return f"-{table[trace]}" if trace in table else "not reported"


def learned(res: dict) -> tuple[str, dict]:  # type: ignore[type-arg]
    """The learned policy's name and metrics in one evaluation."""
    return next((k, v) for k, v in res["policies"].items() if k.startswith("rltune:"))


def variant_table(title: str, intro: str, cols: tuple[str, str], rows: list[tuple[str, str, str]]) -> None:
    """One learned policy's BSLD and wait across evaluation directories (skipped unless all exist)."""
    found = [(load(d), a, b) for d, a, b in rows]
    if not all(r is not None for r, _, _ in found):
        return
    print(f"## {title}\n")
    print((intro + " " if intro else "") + "Commands: "
          + "; ".join(f"`{r['config']['command']}`" for r, _, _ in found if r) + "\n")
    print(f"| {cols[0]} | {cols[1]} | BSLD | wait mean (s) |")
    print("|---|---|---|---|")
    for res, a, b in found:
        assert res is not None
        name, m = learned(res)
        print(f"| {a.format(name=name)}{EARLIER if earlier(res) else ''} | {b} | {m['bsld']:.2f} | "
              f"{m['wait_mean']:.0f} |")
    print()


def naive_vs_full(title: str, intro: str, naive_daemon: str, naive_event: str) -> None:
    """The paper's ablation: a naive-input model's runs against the shipped Philly model's, both modes."""
    # daemon mode like for like: a naive run under the guard of multifactor order only is set against the
    # full model's held-out run of that time
    config = (load(naive_daemon) or {}).get("config", {})
    reference = settings_as_run(config)["starvation_reference"]
    full_daemon = "philly-refpriority" if reference == "priority" else "philly"
    intro += (" Daemon rows with the guard measured against multifactor order only, the default when the "
              "naive runs were made (the full model's held-out run of that time)." if reference == "priority"
              else f" Daemon rows with the shipped guard (`starvation_reference = {reference}`).")
    variant_table(title, intro, ("variant", "mode"),
                  [(naive_daemon, "naive `{name}`", "daemon"),
                   (full_daemon, "full `{name}`", "daemon"),
                   (naive_event, "naive `{name}`", "event"), ("philly-event", "full `{name}`", "event")])


def summary() -> None:
    print("| trace | best heuristic BSLD | RLTune BSLD daemon / event | best heuristic wait (s) | "
          "RLTune wait daemon / event (s) | RLTune daemon BSLD vs FCFS (paper) |")
    print("|---|---|---|---|---|---|")
    for trace in TRACES:
        res, ev = load(trace), load(f"{trace}-event")
        if res is None:
            continue
        pols = res["policies"]
        name, r = learned(res)
        heur = heuristics(pols, name)
        hb = min(heur, key=lambda k: heur[k]["bsld"])
        hw = min(heur, key=lambda k: heur[k]["wait_mean"])
        e = next(iter(ev["policies"].values())) if ev else None
        eb = f"{e['bsld']:.2f}" if e else "n/a"
        ew = f"{e['wait_mean']:.0f}" if e else "n/a"
        print(f"| {trace} | {heur[hb]['bsld']:.2f} ({hb}) | {r['bsld']:.2f} / {eb} | "
              f"{heur[hw]['wait_mean']:.0f} ({hw}) | {r['wait_mean']:.0f} / {ew} | "
              f"{pct(r['bsld'], pols['fcfs']['bsld'])} ({paper(PAPER_VS_FCFS, trace)}) |")
    print()


def guard_section() -> None:
    """The shipped guard against the same run measured against multifactor order only, the old guard
    (stretch 0), one at a time, and none, on held-out windows."""
    rows = [(t, load(t), load(f"{t}-refpriority"), load(f"{t}-stretch0"), load(f"{t}-slots1"),
             load(f"{t}-noguard")) for t in TRACES]
    if not any(r[3] is not None for r in rows):
        return
    print("## Starvation guard (daemon mode)\n")
    print("The daemon keeps no job below its multifactor position, nor below its submit-order position "
          "(`starvation_reference = both`, the default since 2026-11-24: table \"Guard measured against "
          "submit order too\"), for more than max(4 h, 2 × its time limit), never more than 7 days "
          "(`starvation_stretch = 2`, chosen on training-split windows: table \"Choosing the guard's "
          "stretch\"); a safety rule the paper's event-driven setting does not have. `priority`: the "
          "held-out run made before that default, with the guard measured against multifactor order only "
          "(the same command, before `--starvation-reference` existed; kept as `docs/results/<trace>-"
          "refpriority`); the other columns were measured with that reference too. `stretch 0` is the "
          "earlier guard (4 h for every job); `1 at a time` restores kept-back jobs one per tier, longest "
          "kept back first, measured with that earlier guard (`--starvation-slots 1`: on Alibaba "
          "before `--starvation-stretch` existed, on Helios with `--starvation-stretch 0`). Commands: "
          + "; ".join(f"`{r['config']['command']}`" for row in rows for r in row[3:] if r) + "\n")
    print("| trace | policy | BSLD: shipped | priority | stretch 0 | 1 at a time | off | wait (s): shipped | "
          "priority | stretch 0 | 1 at a time | off | max wait (days): shipped | priority | stretch 0 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t, base, *variants in rows:
        if base is None or variants[1] is None:
            continue
        for name in variants[1]["policies"]:
            o = base["policies"][name]
            cells = []
            for key, fmt in (("bsld", "{:.2f}"), ("wait_mean", "{:.0f}")):
                cells.append(fmt.format(o[key]))
                for extra in variants:
                    e = extra["policies"].get(name) if extra else None
                    cells.append(fmt.format(e[key]) + dagger(name, extra) if e else "n/a")
            for extra in (base, *variants[:2]):
                e = extra["policies"].get(name) if extra else None
                cells.append(f"{e['wait_max'] / 86400:.1f}{dagger(name, extra)}" if e else "n/a")
            print(f"| {t} | `{name}` | " + " | ".join(cells) + " |")
    if any(r and earlier(r) for row in rows for r in row[1:]):
        print("\n† measured with the model shipped before this directory was retrained (its actor hash "
              "is in that run's results.json).")
    print()


def stretch_choice() -> None:
    """How the stretch was chosen: 30 training-split windows per trace (never the held-out ones)."""
    runs = [(t, x, load(f"guard-stretch/train-{t}-{x}")) for t in TRACES for x in ("x0", "x2", "x8", "off")]
    found = [(t, x, r) for t, x, r in runs if r is not None]
    if not found:
        return
    print("## Choosing the guard's stretch (training-split windows)\n")
    print("30 windows × 1024 jobs from the training part of each trace (seed 0), the shipped model, "
          "`--starvation-stretch X` (0: the earlier 4-h guard for every job; off: no guard). Runs marked "
          "(before the flag) were made with the earlier code, whose guard is X = 0. Commands: "
          + "; ".join(f"`{r['config']['command']}`" for _, _, r in found) + "\n")
    print("| trace | X | BSLD | wait mean (s) | max wait (days) |")
    print("|---|---|---|---|---|")
    for t, x, r in found:
        m = next(iter(r["policies"].values()))
        label = {"x0": "0", "x2": "2", "x8": "8", "off": "off"}[x]
        if "starvation-stretch" not in r["config"]["command"] and x == "x0":
            label += " (before the flag)"
        if earlier(r):
            label += EARLIER
        print(f"| {t} | {label} | {m['bsld']:.2f} | {m['wait_mean']:.0f} | {m['wait_max'] / 86400:.1f} |")
    print()


def trace_pairs(a: str, b: str) -> list[tuple[str, dict, dict]]:  # type: ignore[type-arg]
    """(trace, run a, run b) for each trace where both runs exist; ``a`` and ``b`` name them with ``{t}``."""
    runs = [(t, load(a.format(t=t)), load(b.format(t=t))) for t in TRACES]
    return [(t, x, y) for t, x, y in runs if x and y]


def guard_reference() -> None:
    """The guard measured against submit order too (``--starvation-reference both``) against the shipped
    reference (multifactor order), paired on 30 training-split windows; rule:
    docs/results/guard-reference/RULE.md."""
    from rltune_daemon.evaluate.paired import load_side, overall, paired_diffs

    run = "guard-reference/train-{t}-{ref}"
    found = trace_pairs(run.replace("{ref}", "priority"), run.replace("{ref}", "both"))
    if not found:
        return
    print("## Guard measured against submit order too (training-split windows)\n")
    print("`starvation_reference = both`: a job kept below its multifactor **or** its submit-order "
          "position for the guard time goes back to the earlier of the two (later jobs are ranked "
          "above it for at most that long; backfill may still start them first where they delay "
          "nothing), against the default `priority` (multifactor position only). The shipped model on "
          "30 windows × 1024 jobs from the training part of each trace (seed 0). Rule, written before the "
          "runs: [RULE.md](results/guard-reference/RULE.md). Commands: "
          + "; ".join(f"`{r['config']['command']}`" for _, a, b in found for r in (a, b)) + "\n")
    print("| trace | BSLD: priority | both | wait (s): priority | both | both − priority: BSLD, wait "
          "(± SE) | verdict | max wait (days): priority | both |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t, prio, both in found:
        a, b = (load_side(str(ROOT / run.format(t=t, ref=ref))) for ref in ("both", "priority"))
        diffs = paired_diffs(a, b)
        mp, mb = (next(iter(r["policies"].values())) for r in (prio, both))
        print(f"| {t} | {mp['bsld']:.2f} | {mb['bsld']:.2f} | {mp['wait_mean']:.0f} | "
              f"{mb['wait_mean']:.0f} | {diff_cells(diffs)} | {overall(diffs)} | "
              f"{mp['wait_max'] / 86400:.1f} | {mb['wait_max'] / 86400:.1f} |")
    print()


def base_choice() -> None:
    """Which heuristic a trace's model starts from (warm start and reward baseline), chosen on
    training-split windows: each heuristic ranked at every event and applied by the daemon."""
    also = {"helios": "helios-base-train"}  # daemon:sjf on the same windows, run before
    for t in TRACES:
        res = load(f"{t}-base-choice")
        if res is None:
            continue
        extra = load(also[t]) if t in also else None
        runs = [res] + ([extra] if extra is not None else [])
        commands = "; ".join(f"`{r['config']['command']}`" for r in runs)
        print(f"## Choosing the base policy ({t}, training-split windows)\n")
        print("The base policy is what a model imitates before PPO and what its reward is measured "
              "against. `daemon:X` is heuristic X applied by the daemon (same cycles and guard as a "
              f"model). Command{'s' if len(runs) > 1 else ''}: {commands}\n")
        print("| policy | BSLD | wait mean (s) |")
        print("|---|---|---|")
        rows = {name: m for r in runs for name, m in r["policies"].items()}
        for name, m in sorted(rows.items()):
            print(f"| `{name}` | {m['bsld']:.2f} | {m['wait_mean']:.0f} |")
        print()


def model_choice() -> None:
    """Retrained models against the ones they would replace, on 30 training-split windows (never the
    held-out ones); the one with lower BSLD and wait is shipped."""
    pairs = trace_pairs("guard-stretch/train-{t}-x2", "{t}-retrained/train-split")
    if not pairs:
        return
    print("## Choosing the shipped models (training-split windows)\n")
    print("Each trace's model retrained with this version's trainer (same command and seed; its daemon mode "
          "uses the stretched guard), against the model it would replace, on the same 30 training-split "
          "windows × 1024 jobs with the shipped guard. Shipped: the one now in `models/`. Commands: "
          + "; ".join(f"`{r['config']['command']}`" for _, old, new in pairs for r in (old, new)) + "\n")
    print("| trace | model | iterations (best) | BSLD | wait mean (s) | shipped |")
    print("|---|---|---|---|---|---|")
    for t, old, new in pairs:
        for label, r in (("previous", old), ("retrained", new)):
            name, m = learned(r)
            ident = r["config"].get("models", {}).get(name, {})
            its = f"{ident.get('iterations', '?')} ({ident.get('best_iteration', '?')})"
            print(f"| {t} | {label} | {its} | {m['bsld']:.2f} | {m['wait_mean']:.0f} | "
                  f"{'yes' if shipped(r) else 'no'} |")
    print()


# The settings of the training-window studies below: the shipped ones when they ran, so the guard is
# measured against multifactor order only (runs recorded before the key existed had that).
SHIPPED_SETTINGS = {"split": "train", "windows": 30, "window_size": 1024, "seed": 0, "mode": "daemon",
                    "starvation_stretch": 2.0, "starvation_seconds": 14400.0, "starvation_slots": 0,
                    "starvation_reference": "priority", "react": 5.0, "interval": 60.0, "milp": True,
                    "pure": False, "estimates": "user", "bf_reservations": 1}


@cache
def all_runs() -> tuple[dict, ...]:  # type: ignore[type-arg]
    """Every evaluation's results.json under docs/results/, in path order (read once; not repeat/'s table
    of verdicts, which has no config)."""
    found = (json.loads(p.read_text()) for p in sorted(ROOT.glob("**/results.json")))
    return tuple(r for r in found if "config" in r)


def shipped_settings(cfg: dict, ignore: tuple[str, ...] = ()) -> bool:  # type: ignore[type-arg]
    """True when a run's config has the shipped settings (``SHIPPED_SETTINGS``, except ``ignore``)."""
    run = settings_as_run(cfg)
    return all(run.get(k) == v for k, v in SHIPPED_SETTINGS.items() if k not in ignore)


def shipped_models() -> list[tuple[str, dict, str]]:  # type: ignore[type-arg]
    """(directory name, manifest, actor hash) of each shipped model with the full features."""
    out = []
    for manifest in sorted((REPO / "models").glob("*/manifest.json")):
        m = json.loads(manifest.read_text())
        if m.get("features", "sampled") == "sampled":
            out.append((manifest.parent.name, m, digest(manifest.parent / "actor.pt")))
    return out


def model_vs_base() -> None:
    """Each shipped model against its base policy applied by the daemon, on the same 30 training-split
    windows with the shipped settings: whether the model helps can be known without the held-out tail."""
    runs = [r for r in all_runs() if shipped_settings(r["config"])]
    rows = []
    for name, m, actor in shipped_models():
        mine = next((r for r in runs if r["config"]["trace"] == m["trace"] and any(
            i["actor_sha256"] == actor for i in r["config"].get("models", {}).values())), None)
        base = next((r for r in runs if r["config"]["trace"] == m["trace"]
                     and f"daemon:{m['base_policy']}" in r["policies"]), None)
        if mine and base:
            rows.append((name, m["base_policy"], mine, base))
    if not rows:
        return
    print("## Does the model beat its base policy? (training-split windows)\n")
    print("Each shipped model and its base policy applied by the daemon without a model (`daemon:<base>`), "
          "on the same 30 training-split windows × 1024 jobs (seed 0) with the shipped settings (the "
          "guard measured against multifactor order only, the default until 2026-11-24); no "
          "held-out window involved. Runs: "
          + "; ".join(f"`{r['config']['command']}`" for _, _, a, b in rows for r in (a, b)) + "\n")
    print("| model | BSLD: model | daemon:base | wait (s): model | daemon:base |")
    print("|---|---|---|---|---|")
    for name, base, a, b in rows:
        ma, mb = learned(a)[1], b["policies"][f"daemon:{base}"]
        print(f"| `{name}` | {ma['bsld']:.2f} | {mb['bsld']:.2f} | {ma['wait_mean']:.0f} | "
              f"{mb['wait_mean']:.0f} |")
    print()


SPLITS = {"train": 30, "train-tail": 30, "held-out": 10}  # windows of each split's runs


def bsld_by_split(trace: str, entity: str) -> dict[str, float]:
    """Mean BSLD of ``entity`` (an actor hash, or ``daemon:<base>``) on ``trace`` for each split, from any
    run with the shipped settings (first found, in path order)."""
    out: dict[str, float] = {}
    for r in all_runs():
        cfg = r["config"]
        split = cfg.get("split", "held-out")
        if cfg["trace"] != trace or split in out or SPLITS.get(split) != cfg.get("windows") or \
                not shipped_settings(cfg, ignore=("split", "windows")):
            continue
        names = {n for n, i in cfg.get("models", {}).items() if i["actor_sha256"] == entity} or (
            {entity} & set(r["policies"]))
        if names:
            out[split] = r["policies"][min(names)]["bsld"]
    return out


def studied_models() -> list[tuple[str, dict, str]]:  # type: ignore[type-arg]
    """The shipped models as they were when the temporal-validation study ran: a model replaced since
    is read from its copy in train-tail/studied/ and labelled as the earlier model."""
    out = []
    studied = {p.parent.name for p in (ROOT / "train-tail" / "studied").glob("*/actor.pt")}
    current = {name: (m, actor) for name, m, actor in shipped_models()}
    for name in sorted(studied | set(current)):
        old = ROOT / "train-tail" / "studied" / name
        if name in studied:  # replaced since (or no longer shipped under this name)
            manifest = json.loads((old / "manifest.json").read_text())
            out.append((name + EARLIER, manifest, digest(old / "actor.pt")))
        else:
            out.append((name, *current[name]))
    return out


def temporal_validation() -> None:
    """Does the training part's tail order models as the held-out tail does? (rule in
    docs/results/train-tail/RULE.md, written before the runs)."""
    rows = []
    for model, m, mine in studied_models():
        t = m["trace"]
        others = [(f"`daemon:{m['base_policy']}`", f"daemon:{m['base_policy']}")]
        prev = next(iter(sorted((ROOT / "train-tail" / "previous").glob(f"{t}-*"))), None)
        if prev is not None and (prev / "actor.pt").is_file():
            others.append((f"previous `{prev.name}`", digest(prev / "actor.pt")))
        for label, other in others:
            a, b = bsld_by_split(t, mine), bsld_by_split(t, other)
            if all(k in a and k in b for k in SPLITS):
                shown = f"`{model.removesuffix(EARLIER)}`" + (EARLIER if model.endswith(EARLIER) else "")
                rows.append((shown, label, a, b))
    if not rows:
        return
    print("## Which windows predict the held-out result? (temporal validation)\n")
    print("Each shipped model against its base policy and, where it replaced one, the previous model, on "
          "30 windows from anywhere in the training part (`--split train`), 30 from the training part's own "
          "tail (`--split train-tail`: jobs 81–90 %, history before them), and the 10 held-out windows; "
          "all with the shipped settings of the time (the guard measured against multifactor order only), "
          "mean BSLD. A split agrees when it says the same as the held-out "
          "windows about which of the two is lower. Rule, written before the runs: "
          "docs/results/train-tail/RULE.md. Commands: `bash docs/scripts/results.sh` block `TAIL=1`.\n")
    print("| model | against | train: model / other | train-tail: model / other | held-out: model / other | "
          "train agrees | train-tail agrees |")
    print("|---|---|---|---|---|---|---|")
    agree = {"train": 0, "train-tail": 0}
    for name, label, a, b in rows:
        truth = a["held-out"] < b["held-out"]
        cells = []
        for split in ("train", "train-tail"):
            ok = (a[split] < b[split]) == truth and a[split] != b[split]
            agree[split] += ok
            cells.append("yes" if ok else "no (tie)" if a[split] == b[split] else "no")
        pairs = " | ".join(f"{a[k]:.2f} / {b[k]:.2f}" for k in SPLITS)
        print(f"| {name} | {label} | {pairs} | {cells[0]} | {cells[1]} |")
    print(f"\nAgreement: `train` {agree['train']} of {len(rows)}, `train-tail` {agree['train-tail']} of "
          f"{len(rows)}.\n")


def qssf_history() -> None:
    """QSSF as the daemon's base policy now that a live daemon feeds it sacct history: chosen on the
    training part's tail (rule: docs/results/philly-qssf-base/RULE.md), then reported on held-out."""
    tail, held = load("philly-qssf-base/train-tail"), load("philly-qssf-base/heldout")
    if tail is None or held is None:
        return
    print("## QSSF with its run history as the daemon's base policy (philly)\n")
    print("A live daemon with `base_policy = \"qssf\"` learns finished runs from sacct (docs/operations.md, "
          "\"QSSF on a live cluster\"); `daemon:qssf` is that, simulated (history: the training part, then "
          "every finished job). Rule, written before the held-out run: "
          "[RULE.md](results/philly-qssf-base/RULE.md). Commands: "
          f"`{tail['config']['command']}`; `{held['config']['command']}`\n")
    print("| policy | BSLD, tail (choice) | wait (s), tail | BSLD, held-out (report) | wait (s), held-out |")
    print("|---|---|---|---|---|")
    for name, m in tail["policies"].items():
        h = held["policies"].get(name)
        hb, hw = bsld_wait(h)
        print(f"| `{name}` | {m['bsld']:.2f} | {m['wait_mean']:.0f} | {hb} | {hw} |")
    print()


def history_input() -> None:
    """Philly retrained with the run-history input (``hist_time``), judged on the training part's tail
    against the shipped model (rule: docs/results/philly-hist/RULE.md), then reported on held-out."""
    runs = [("train-tail/philly", None), ("philly-qssf-base/train-tail", "daemon:qssf"),
            ("philly-hist/train-tail", None), ("philly-hist/train-tail-qssf", None)]
    loaded = [(load(name), only) for name, only in runs]
    if any(res is None for res, _ in loaded[2:]):
        return
    held = load("philly-hist/heldout")
    print("## Run history as an actor input (philly)\n")
    print("Two 30-minute runs with the 9th input `hist_time` (docs/features.md): base SJF (the shipped "
          "model's command unchanged) and base QSSF (which the actor can now imitate). Rule, written "
          "before the runs: [RULE.md](results/philly-hist/RULE.md). Tail = the training part's last 10 %, "
          "30 x 1024 jobs, seed 0 (the choice); held-out = 10 x 1024 (the report). Commands: "
          + "; ".join(f"`{res['config']['command']}`" for res, _ in loaded if res is not None)
          + (f"; `{held['config']['command']}`" if held else "") + "\n")
    print("| policy | BSLD, tail | wait (s), tail | BSLD, held-out | wait (s), held-out |")
    print("|---|---|---|---|---|")
    for res, only in loaded:
        assert res is not None
        for name, m in res["policies"].items():
            if (only and name != only) or name.startswith("rltune:/tmp"):
                continue
            h = (held or {}).get("policies", {}).get(name)
            hb, hw = bsld_wait(h)
            label = f"`{name}`" + (EARLIER if earlier(res) and name.startswith("rltune:models/") else "")
            print(f"| {label} | {m['bsld']:.2f} | {m['wait_mean']:.0f} | {hb} | {hw} |")
    print()


def residual_models() -> None:
    """Residual models (``--reach``): SJF's order with local swaps, judged on the training part's tail
    against the shipped model (rule: docs/results/philly-residual/RULE.md)."""
    rows: list[tuple[str, str, dict | None, str]] = [  # type: ignore[type-arg]
        ("philly", "daemon:sjf", load("train-tail/philly"), "`daemon:sjf`"),
        ("philly", "rltune:docs/results/philly-hist/model", load("philly-hist/train-tail"),
         SHIPPED_TAIL["philly"][1]),
        ("philly", "rltune:docs/results/philly-residual/model", load("philly-residual/train-tail"),
         "residual, reach 8 (run 1)"),
        ("helios", "daemon:sjf", load("train-tail/helios"), "`daemon:sjf`"),
        ("helios", "rltune:models/helios-sjf", load("train-tail/helios"),
         "`models/helios-sjf` shipped before (train-tail/studied/helios-sjf)"),
        ("helios", "rltune:docs/results/philly-residual/model-helios",
         load("philly-residual/train-tail-helios"),
         "residual, reach 8, `--credit step` (run 2; shipped as `models/helios-sjf` until run I)"),
    ]
    if rows[2][2] is None:
        return
    print("## Residual models: the base order with local swaps (philly, helios)\n")
    print("`rltune train ... --reach 8`: the actor corrects SJF's order, each job by fewer than 8 places, "
          "and starts as SJF's order exactly (docs/learning.md, \"Residual models\"). Rule, written before "
          "the runs: [RULE.md](results/philly-residual/RULE.md). Tail = the training part's last 10 %, 30 x "
          "1024 jobs, seed 0 (the choice). Commands: "
          + "; ".join(dict.fromkeys(f"`{res['config']['command']}`" for _, _, res, _ in rows if res)) + "\n")
    print("| trace | policy | BSLD, tail | wait (s), tail | "
          "trainer's held-out BSLD / wait (recorded, not used) |")
    print("|---|---|---|---|---|")
    for trace, name, res, label in rows:
        if res is None or name not in res["policies"]:
            continue
        m = res["policies"][name]
        held = trainer_heldout(name) if "residual" in name else "-"
        print(f"| {trace} | {label} | {m['bsld']:.3f} | {m['wait_mean']:.2f} | {held} |")
    print()


def residual_contended() -> None:
    """Residual models trained and validated on windows that queue, judged on the training part's tail
    against the shipped model with ``rltune compare``'s tie band (rule:
    docs/results/residual-contended/RULE.md)."""
    ship_a = "`models/testbed-multifactor` shipped before (train-tail/studied/testbed-multifactor)"
    runs = [  # trace, shipped model (results dir#policy) and its label, the new run's tail results and label
        ("testbed", "train-tail/testbed#rltune:models/testbed-multifactor", ship_a,
         "residual-contended/train-tail-testbed",
         "residual, run A (shipped as `models/testbed-multifactor` until run F)"),
        ("philly", *SHIPPED_TAIL["philly"], "residual-contended/train-tail-philly", "residual, run B"),
        ("helios", *SHIPPED_TAIL["helios"], "residual-contended/train-tail-helios", "residual, run C"),
    ]
    bases = {"testbed": ["train-tail/testbed#daemon:multifactor"], "philly": ["train-tail/philly#daemon:sjf"],
             "helios": ["train-tail/helios#daemon:sjf"]}
    tail_verdicts("Residual models trained on windows that queue",
                  "`rltune train ... --reach 8 --episodes contended --credit step`: residual models "
                  "(docs/learning.md, \"Residual models\") whose training *and* validation episodes are the "
                  "windows that queue most under the base policy. Rule, written before the runs: "
                  "[RULE.md](results/residual-contended/RULE.md): on the training part's tail (30 x 1024 "
                  "jobs, seed 0) the new model replaces the shipped one only if `rltune compare` finds "
                  "neither metric higher and one lower, beyond 2 standard errors of the per-window "
                  "difference.",
                  runs, bases)


SHIPPED_TAIL = {  # the shipped models' runs on the training part's tail (30 x 1024, seed 0), and their labels
    "philly": ("philly-hist/train-tail#rltune:docs/results/philly-hist/model",
               "`models/philly-sjf`, shipped until run H (philly-hist/model)"),
    "helios": ("philly-residual/train-tail-helios",
               "`models/helios-sjf`, shipped until run I (philly-residual/model-helios)"),
}


def cem_models() -> None:
    """Linear scorers found by cross-entropy search, judged as the residual runs are (rule:
    docs/results/cem/RULE.md), and the formulas they learned."""
    runs = [
        ("philly", *SHIPPED_TAIL["philly"], "cem/train-tail-philly", "linear, cross-entropy search, run D"),
        ("helios", *SHIPPED_TAIL["helios"], "cem/train-tail-helios", "linear, cross-entropy search, run E"),
        ("testbed", "residual-contended/train-tail-testbed",
         "`models/testbed-multifactor` shipped before (residual-contended/model-testbed, run A)",
         "cem/train-tail-testbed",
         "residual linear (reach 8), cross-entropy search, run F (shipped as "
         "`models/testbed-multifactor` until T1)"),
    ]
    bases = {"philly": ["train-tail/philly#daemon:sjf", "philly-qssf-base/train-tail#daemon:qssf"],
             "helios": ["train-tail/helios#daemon:sjf"], "testbed": ["train-tail/testbed#daemon:multifactor"]}
    done = tail_verdicts("A linear scorer found by cross-entropy search",
                         "`rltune train --algo cem --episodes contended` (docs/learning.md, \"Cross-entropy "
                         "search\"): a weighted sum of the 9 actor inputs, each generation's 12 candidates "
                         "run on the same 4 windows that queue; Philly and Helios from a linear fit of SJF "
                         "(`--warm-start 16`), the testbed as a residual model over multifactor "
                         "(`--reach 8`). Rule, written before the runs: "
                         "[RULE.md](results/cem/RULE.md): the same tie band as the residual runs.",
                         runs, bases)
    if not done:
        return
    formula_table("The formulas (score = sum of weight x input + bias, higher first; inputs in the "
                  "normalised units of docs/features.md; for the residual testbed model the sum is the "
                  "correction m of `key = 4 tanh(m) - place in multifactor's order`):",
                  "trace", [(trace, f"cem/model-{trace}") for trace, *_ in done])


def formula_table(intro: str, head: str, models: list[tuple[str, str]]) -> None:
    """The weights of linear models (manifest ``linear_scorer``), one row per (label, model dir)."""
    slots = [s.name for s in ACTOR_SLOTS]
    print(intro + "\n")
    print(f"| {head} | " + " | ".join(f"`{n}`" for n in slots) + " | bias |")
    print("|---|" + "---|" * (len(slots) + 1))
    for label, model in models:
        path = ROOT / model / "manifest.json"
        if path.exists():
            w = json.loads(path.read_text())["linear_scorer"]
            print(f"| {label} | " + " | ".join(f"{w[n]:+.3f}" for n in slots) + f" | {w['bias']:+.3f} |")
    print()


def recent_windows() -> None:
    """Runs G and H (Philly, cross-entropy search with QSSF as base) judged on disjoint windows of the
    training part's last jobs, all of them (run G) or the 30 where `daemon:sjf` queues most (run H);
    rule: docs/results/recent/RULE.md."""
    ship_label = SHIPPED_TAIL["philly"][1]
    rec = "recent/train-recent-philly"
    runs = [("philly", f"{rec}#rltune:models/philly-sjf", ship_label, f"{rec}-{run}", label)
            for run, label in (
        ("g", "linear over QSSF's inputs, cross-entropy search against QSSF, run G"),
        ("d", "run D (reported; not eligible, its trainer's held-out result was seen)"),
    )]
    bases = {"philly": [f"{rec}#daemon:sjf", f"{rec}#daemon:qssf"]}
    intro = ("Random windows in the training part's tail overlap (each Philly job sits in about four of "
             "the 30), so `rltune compare`'s standard error there is too small. `--split train-recent` "
             "lays 30 windows end to end over the training part's last 30,720 jobs (41.5-90 % of the "
             "trace). Rule, written before the runs: [RULE.md](results/recent/RULE.md); choice as before "
             "(better against the shipped model beyond 2 SE).")
    tail_verdicts("Disjoint recent windows: a cross-entropy search against QSSF", intro, runs, bases,
                  split="recent")
    formula_table("The formulas (as in the previous section; runs G and H start from a linear fit of "
                  "QSSF's order):", "run",
                  [("D (SJF base)", "cem/model-philly"), ("G (QSSF base)", "recent/model-philly-qssf"),
                   ("H (QSSF base, seed 1)", "recent/model-philly-qssf-s1")])
    busy = "recent/busiest-philly"
    runs_h = [("philly", f"{busy}#rltune:models/philly-sjf", ship_label,
               f"{busy}#rltune:docs/results/{model}", label) for model, label in (
        ("recent/model-philly-qssf-s1", "run H (as run G, seed 1; shipped since as `models/philly-qssf`)"),
        ("recent/model-philly-qssf", "run G (reported; not eligible)"),
        ("cem/model-philly", "run D (reported; not eligible)"),
    )]
    tail_verdicts("The busiest of all disjoint training windows: run H",
                  "All 72 disjoint windows of Philly's training part (`--split train-recent --windows 72`), "
                  "compared on the 30 where `daemon:sjf` has the highest BSLD (`rltune compare ... "
                  "--busiest 30 --by RESULTS#daemon:sjf`): quiet windows add noise and nothing about the "
                  "congested held-out regime. Rule, written before run H: "
                  "[RULE.md](results/recent/RULE.md).",
                  runs_h, {"philly": [f"{busy}#daemon:sjf", f"{busy}#daemon:qssf"]}, split="busiest 30",
                  busiest=(f"{busy}#daemon:sjf", 30))


RUN_I = "helios-recent/model-helios-sjf"  # Helios run I's training output; models/helios-sjf since 2026-11-24


def helios_recent() -> None:
    """Run I (Helios, cross-entropy search against SJF, seed 1) judged on all 17 disjoint windows of
    Helios' training part; rule: docs/results/helios-recent/RULE.md."""
    rec = "helios-recent/train-recent"
    runs = [("helios", f"{rec}#rltune:models/helios-sjf", SHIPPED_TAIL["helios"][1],
             f"{rec}#rltune:docs/results/{model}", label) for model, label in (
        (RUN_I, "linear, cross-entropy search against SJF, seed 1, run I (shipped since as "
                "`models/helios-sjf`: next table)"),
        ("cem/model-helios", "run E (reported; not eligible, its trainer's held-out result was seen)"),
    )]
    tail_verdicts("All disjoint training windows: a second cross-entropy search", "Helios' training part "
                  "holds 17 disjoint windows of 1,024 jobs (`--split train-recent --windows 17`, jobs "
                  "3-90 % of the trace); the base policy for run I was chosen first on 30 training "
                  "windows (table \"Choosing the base policy (helios…)\": neither WFP3 nor UNICEP "
                  "applied by the daemon had less wait than SJF beyond 2 SE, so SJF, seed 1). Rule, "
                  "written before the runs: [RULE.md](results/helios-recent/RULE.md).",
                  runs, {"helios": [f"{rec}#daemon:sjf"]}, split="17 disjoint")
    formula_table("The formulas (runs E and I start from a linear fit of SJF's order):", "run",
                  [("E (seed 0)", "cem/model-helios"), ("I (seed 1)", RUN_I)])


def helios_fresh() -> None:
    """Run I judged again on 80 disjoint windows of a freshly generated Helios trace (seed 2, 100,000
    jobs): the 17 windows of the trace's own training part could not separate it from the shipped model;
    rule: docs/results/helios-fresh/RULE.md."""
    fresh = "helios-fresh"
    runs = [("helios", f"{fresh}#rltune:models/helios-sjf", SHIPPED_TAIL["helios"][1],
             f"{fresh}#rltune:docs/results/{RUN_I}",
             "run I (shipped since as `models/helios-sjf`)")]
    tail_verdicts("Freshly generated windows: run I again", "Helios is generated from its published "
                  "statistics, so the generator gives as many fresh windows as a choice needs: the seed-2 "
                  "trace with 100,000 jobs (offered load 0.752; the seed-0 trace 0.744), its training "
                  "part laid end to end in 80 disjoint 1,024-job windows, independent of the held-out "
                  "windows (seed-0 trace) and of every model's training data (seed 0, run I seed 1). "
                  "Rule, written before the run: [RULE.md](results/helios-fresh/RULE.md).",
                  runs, {"helios": [f"{fresh}#daemon:sjf"]}, split="80 fresh")
    other_traces = [(s, r) for s in (3, 4) if (r := load(f"{fresh}/heldout-seed{s}")) is not None]
    if other_traces:  # after the choice, reported: the held-out windows of other generated traces
        cols = [("run I", "rltune:models/helios-sjf"),
                ("residual model", "rltune:docs/results/philly-residual/model-helios"),
                ("`daemon:sjf`", "daemon:sjf"), ("SJF", "sjf"), ("WFP3", "wfp3"), ("UNICEP", "unicep")]
        print("| trace | " + " | ".join(c for c, _ in cols) + " |")
        print("|---|" + "---|" * len(cols))
        for seed, res in other_traces:
            pols = res["policies"]
            best = {k: min(pols[p][k] for _, p in cols) for k in ("bsld", "wait_mean")}
            cells = []
            for _, p in cols:
                m = pols[p]
                cell = f"{m['bsld']:.2f} / {m['wait_mean']:.0f} s"
                cells.append(f"**{cell}**" if all(m[k] == best[k] for k in best) else cell)
            print(f"| seed {seed} | " + " | ".join(cells) + " |")
        print()


SHIPPED_TESTBED = "cem/model-testbed"  # run F, shipped as models/testbed-multifactor until 2026-11-24 (T1)


def testbed_fresh() -> None:
    """Cross-entropy formulas that rank on their own (``--reach 0``) against the shipped residual testbed
    model, on 80 disjoint windows of a freshly generated testbed trace (seed 2, 100,000 jobs); rule:
    docs/results/testbed-fresh/RULE.md."""
    fresh = "testbed-fresh"
    runs = [("testbed", f"{fresh}#rltune:docs/results/{SHIPPED_TESTBED}",
             "residual linear (reach 8), run F (`models/testbed-multifactor` until T1)",
             f"{fresh}#rltune:docs/results/{fresh}/model-{run}", label)
            for run, label in (("t1", "linear, cross-entropy search against multifactor, T1 (then shipped "
                                      "as `models/testbed-multifactor` until its fine-tuning)"),
                               ("t2", "linear, cross-entropy search against FCFS, T2"))]
    intro = ("On the testbed multifactor leaves the 6 % two-node jobs waiting about 13 hours (FCFS about"
             " 4), and they carry most of its mean wait; the shipped residual model cannot move a job 8 "
             "places or more, so it cannot lift them. T1 and T2 are cross-entropy searches over a linear"
             " scorer that ranks on its own (`--warm-start 16 --episodes contended`, seed 0, on the "
             "seed-0 trace's training part), judged on the seed-2 trace with 100,000 jobs, its training "
             "part laid end to end in 80 disjoint 1,024-job windows. Rule, written before the runs: "
             "[RULE.md](results/testbed-fresh/RULE.md).")
    done = tail_verdicts("Freshly generated windows: formulas that rank on their own", intro,
                         runs, {"testbed": [f"{fresh}#{p}" for p in ("fcfs", "multifactor",
                                                                     "daemon:multifactor")]},
                         split="80 fresh")
    if done:
        formula_table("The formulas (score = sum of weight x input + bias, higher first):", "run",
                      [("T1 (against multifactor)", f"{fresh}/model-t1"),
                       ("T2 (against FCFS)", f"{fresh}/model-t2")])
    target = load(f"{fresh}/seed3")
    if target is None:
        return
    from rltune_daemon.evaluate.paired import load_side, overall, paired_diffs

    print("Neither is better than run F, so by that rule nothing ships. The issue's target is another "
          "question, both means below FCFS's wait and multifactor's BSLD, and a second rule, written after "
          "those windows and therefore judged on new ones (a seed-3 trace, laid out the same way), asks it: "
          "T1 replaces run F if it is higher than neither FCFS nor multifactor in either mean beyond 2 SE "
          f"while run F is higher than one of them. Command: `{target['config']['command']}`\n")
    print("| policy | BSLD | wait (s) | against FCFS: BSLD, wait (A − B ± SE) | against multifactor | "
          "jobs hurt / helped vs multifactor |")
    print("|---|---|---|---|---|---|")
    rows = (("FCFS", "fcfs"), ("multifactor", "multifactor"),
            ("run F (shipped until T1)", f"rltune:docs/results/{SHIPPED_TESTBED}"),
            ("T1 (shipped next)", f"rltune:docs/results/{fresh}/model-t1"))
    sides = {spec: load_side(str(ROOT / f"{fresh}/seed3#{spec}")) for _, spec in rows}
    for label, spec in rows:
        m = target["policies"][spec]
        cells = []
        for ref in ("fcfs", "multifactor"):
            if ref == spec:
                cells.append("-")
                continue
            diffs = paired_diffs(sides[spec], sides[ref])
            cells.append(f"{diff_cells(diffs)}: {overall(diffs)}")
        hurt = m.get("vs_multifactor")
        jobs = f"{hurt['hurt_pct']:.1f} % / {hurt['helped_pct']:.1f} %" if hurt else "-"
        print(f"| {label} | {m['bsld']:.2f} | {m['wait_mean']:.0f} | {cells[0]} | {cells[1]} | {jobs} |")
    print()


def backfill_reservations() -> None:
    """Slurm-like reservations for every tested job (``--bf-reservations 500``) against EASY (1) on 30
    testbed training-split windows; rule: docs/results/backfill-reservations/RULE.md."""
    run = "backfill-reservations/train-testbed-r{r}"
    easy, slurm = load(run.format(r=1)), load(run.format(r=500))
    if not easy or not slurm:
        return
    print("## Reservations for every blocked job, as Slurm's backfill (testbed, training-split windows)\n")
    print("EASY backfill (`--bf-reservations 1`, what every other table uses: one reservation per partition, "
          "its head) against Slurm's `sched/backfill` (`--bf-reservations 500`: every job it tests gets a "
          "reservation, so no later job may delay any of them), the same 30 windows × 1024 jobs from the "
          "testbed's training part (seed 0). Rule, written before the runs: "
          "[RULE.md](results/backfill-reservations/RULE.md). Commands: "
          f"`{easy['config']['command']}`; `{slurm['config']['command']}`\n")
    reservation_tables(run, easy, slurm, ("multifactor", "fcfs"))


def reservation_tables(run: str, easy: dict, slurm: dict, refs: tuple[str, ...]) -> None:  # type: ignore[type-arg]
    """Every policy under EASY (``easy``, the results of ``run`` with r=1) and Slurm-like reservations
    (``slurm``, r=500), and the learned policy against ``refs`` under each (``rltune compare`` over the
    same windows)."""
    from rltune_daemon.evaluate.paired import load_side, overall, paired_diffs

    print("| policy | BSLD: EASY | Slurm-like | wait (s): EASY | Slurm-like | Slurm-like − EASY: BSLD, wait "
          "(± SE) | verdict | max wait (days): EASY | Slurm-like |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec, m1 in easy["policies"].items():
        m5 = slurm["policies"][spec]
        diffs = paired_diffs(*(load_side(str(ROOT / f"{run.format(r=r)}#{spec}")) for r in (500, 1)))
        print(f"| `{spec}` | {m1['bsld']:.2f} | {m5['bsld']:.2f} | {m1['wait_mean']:.0f} | "
              f"{m5['wait_mean']:.0f} | {diff_cells(diffs)} | {overall(diffs)} | "
              f"{m1['wait_max'] / 86400:.1f} | {m5['wait_max'] / 86400:.1f} |")
    print()
    model = next(k for k in easy["policies"] if k.startswith("rltune:"))
    names = {"fcfs": "FCFS"}
    against = [names.get(r, r) for r in refs]
    print(f"`{model}` against {', '.join(against[:-1])} and {against[-1]} under each backfill "
          "(A − B ± SE, same windows):\n")
    heads = (f"against {a}: BSLD, wait | verdict" for a in against)
    print("| backfill | " + " | ".join(heads) + " |")
    print("|---|" + "---|---|" * len(refs))
    for r, label in ((1, "EASY"), (500, "Slurm-like")):
        cells = []
        for ref in refs:
            diffs = paired_diffs(*(load_side(str(ROOT / f"{run.format(r=r)}#{p}")) for p in (model, ref)))
            cells += [diff_cells(diffs), overall(diffs)]
        print(f"| {label} | {' | '.join(cells)} |")
    print()


BF500_BASES = {"alibaba": "sjf", "philly": "qssf", "helios": "sjf"}


def bf500_traces() -> None:
    """The Philly, Helios and Alibaba models under Slurm-like reservations against EASY on 30
    training-split windows each, then the held-out windows under Slurm-like reservations (reported, not
    used); rule: docs/results/bf500-traces/RULE.md."""
    from rltune_daemon.evaluate.paired import load_side, overall, paired_diffs

    run = "bf500-traces/train-{t}-r{{r}}"
    loaded = ((t, *(load(run.format(t=t).format(r=r)) for r in (1, 500))) for t in BF500_BASES)
    done = [(t, easy, slurm) for t, easy, slurm in loaded if easy and slurm]
    if not done:
        return
    print("## Slurm-like reservations on Philly, Helios and Alibaba (training-split windows)\n")
    print("The testbed study above (\"Reservations for every blocked job\") for the other three shipped "
          "models: EASY backfill (`--bf-reservations 1`, every other table) against Slurm's "
          "`sched/backfill` (`--bf-reservations 500`), 30 windows × 1024 jobs from each trace's training "
          "part (seed 0). A model *holds* if under Slurm-like reservations neither its mean BSLD nor its "
          "mean wait is higher than its base's beyond 2 SE. Rule, written before the runs: "
          "[RULE.md](results/bf500-traces/RULE.md).\n")
    for t, easy, slurm in done:
        pattern = run.format(t=t)
        print(f"### {t}\n")
        print(f"Commands: `{easy['config']['command']}`; `{slurm['config']['command']}`\n")
        extra = tuple(p for p in ("unicep",) if p in slurm["policies"])  # Helios's best heuristic
        reservation_tables(pattern, easy, slurm, (BF500_BASES[t], *extra, "multifactor"))
    held = [(t, res) for t in BF500_BASES if (res := load(f"bf500-traces/heldout-{t}-r500"))]
    if not held:
        return
    print("Reported once after the reading, not used for any choice: the held-out windows (10 × 1024, "
          "seed 0, as the tables \"philly\", \"helios\", \"alibaba\") under Slurm-like reservations. "
          "Commands: " + "; ".join(f"`{res['config']['command']}`" for _, res in held) + "\n")
    print("| trace | policy | BSLD | wait (s) | model − policy: BSLD, wait (± SE) | verdict |")
    print("|---|---|---|---|---|---|")
    for t, res in held:
        model = next(k for k in res["policies"] if k.startswith("rltune:"))
        side = load_side(str(ROOT / f"bf500-traces/heldout-{t}-r500#{model}"))
        for spec, m in res["policies"].items():
            cells = "- | -"
            if spec != model:
                diffs = paired_diffs(side, load_side(str(ROOT / f"bf500-traces/heldout-{t}-r500#{spec}")))
                cells = f"{diff_cells(diffs)} | {overall(diffs)}"
            print(f"| {t} | `{spec}` | {m['bsld']:.2f} | {m['wait_mean']:.0f} | {cells} |")
    print()


def testbed_bf500() -> None:
    """T1 fine-tuned under Slurm-like reservations (``rltune train --init ... --bf-reservations 500``),
    judged against T1 under both backfills on 40 windows of a fresh testbed trace (seed 4); rule:
    docs/results/testbed-bf500/RULE.md."""
    from rltune_daemon.evaluate.paired import load_side, overall, paired_diffs

    run = "testbed-bf500"
    easy, slurm = load(f"{run}/easy"), load(f"{run}/r500")
    manifest = ROOT / run / "model" / "manifest.json"
    if not easy or not slurm or not manifest.is_file():
        return
    trained = json.loads(manifest.read_text())
    t1, tuned = "rltune:models/testbed-multifactor", f"rltune:docs/results/{run}/model"
    print("## Fine-tuning the testbed model under Slurm-like reservations (testbed, fresh windows)\n")
    print("T1 (shipped as `models/testbed-multifactor` until this study, searched under EASY backfill) "
          "trails multifactor in BSLD when every blocked job gets a reservation, as in Slurm's "
          "`sched/backfill` (section \"Reservations for every blocked job\"). The fine-tuned model "
          "starts from T1's weights (`rltune train --init`, "
          "docs/learning.md) and searches under `--bf-reservations 500`: `rltune train --trace testbed "
          "--base multifactor --algo cem --init models/testbed-multifactor --episodes contended "
          "--episode-jobs 1024 --cem-sigma 0.25 --bf-reservations 500 --minutes 30 --seed 0 "
          f"--heldout-windows 0 --out docs/results/{run}/model` ({trained['iterations']} generations in "
          f"{trained['training_minutes']:.1f} min; validation reward against multifactor: T1 "
          f"{trained['validation_reward_start']:+.3f}, best {trained['validation_reward']:+.3f} at "
          f"generation {trained['best_iteration']}). Judged on 40 disjoint 1,024-job windows of a testbed "
          "trace no result had used (seed 4, 100,000 jobs, the training part's last windows). Rule, written "
          f"before the runs: [RULE.md](results/{run}/RULE.md). Commands: `{slurm['config']['command']}`; "
          f"`{easy['config']['command']}`\n")
    print("| policy | BSLD: EASY | Slurm-like | wait (s): EASY | Slurm-like |")
    print("|---|---|---|---|---|")
    label = {t1: "T1 (`models/testbed-multifactor` when measured)", tuned: "T1 fine-tuned under Slurm-like"}
    for spec, m1 in easy["policies"].items():
        b5, w5 = bsld_wait(slurm["policies"].get(spec))
        print(f"| {label.get(spec, f'`{spec}`')} | {m1['bsld']:.2f} | {b5} | {m1['wait_mean']:.0f} | {w5} |")
    print()
    print("A − B ± SE over the same 40 windows (`rltune compare`):\n")
    print("| A | B | backfill | BSLD, wait | verdict |")
    print("|---|---|---|---|---|")
    pairs = ((tuned, t1, "fine-tuned", "T1"), (tuned, "multifactor", "fine-tuned", "multifactor"),
             (t1, "multifactor", "T1", "multifactor"))
    for a, b, la, lb in pairs:
        for name, label in (("r500", "Slurm-like"), ("easy", "EASY")):
            diffs = paired_diffs(*(load_side(str(ROOT / f"{run}/{name}#{x}")) for x in (a, b)))
            print(f"| {la} | {lb} | {label} | {diff_cells(diffs)} | {overall(diffs)} |")
    print()
    formula_table("The formulas (score = sum of weight x input + bias, higher first):", "model",
                  [("T1", "testbed-fresh/model-t1"),  # the same actor as models/testbed-multifactor (sha256)
                   ("T1 fine-tuned under Slurm-like", f"{run}/model")])
    held = load(f"{run}/heldout-r500")
    if held is None:
        return
    print("By that rule the fine-tuned model replaced T1 as `models/testbed-multifactor` (table \"testbed\" "
          "for the held-out windows under EASY). Reported after the choice, not used for it: the held-out "
          f"windows under Slurm-like reservations. Command: `{held['config']['command']}`\n")
    print("| policy | BSLD | wait (s) | against multifactor: BSLD, wait (A − B ± SE) | verdict |")
    print("|---|---|---|---|---|")
    ref = load_side(str(ROOT / f"{run}/heldout-r500#multifactor"))
    names = {"rltune:docs/results/testbed-fresh/model-t1": "T1", "rltune:models/testbed-multifactor":
             "the fine-tuned model (`models/testbed-multifactor`)"}
    for spec, m in held["policies"].items():
        cells = "- | -"
        if spec != "multifactor":
            diffs = paired_diffs(load_side(str(ROOT / f"{run}/heldout-r500#{spec}")), ref)
            cells = f"{diff_cells(diffs)} | {overall(diffs)}"
        print(f"| {names.get(spec, f'`{spec}`')} | {m['bsld']:.2f} | {m['wait_mean']:.0f} | {cells} |")
    print()


def diff_cells(diffs: list[PairedDiff]) -> str:
    """`rltune compare`'s paired differences as a table cell: "A − B ± SE" per metric."""
    return ", ".join(f"{d.diff:+.3f} ± {d.se:.3f}" if d.metric == "bsld" else f"{d.diff:+.0f} ± {d.se:.0f} s"
                     for d in diffs)


def tail_verdicts(title: str, intro: str, runs: list[tuple[str, str, str, str, str]],
                  bases: dict[str, list[str]], split: str = "tail",
                  busiest: tuple[str, int] | None = None) -> list[tuple[str, str, str, str, str]]:
    """A table of new models against the shipped ones on a training split (the tail unless ``split``
    says otherwise; with ``busiest = (spec, n)`` only the n windows where that policy's BSLD is highest),
    with `rltune compare`'s verdict; each trace's base policies and shipped model once, for reference.
    Returns the runs that have results."""
    from rltune_daemon.evaluate.paired import load_side, overall, paired_diffs

    done = [r for r in runs if load(r[3].partition("#")[0]) is not None]
    if not done:
        return done
    specs = [spec for r in done for spec in (*bases[r[0]], r[1], r[3])]
    commands = dict.fromkeys(f"`{res['config']['command']}`" for spec in specs
                             if (res := load(spec.partition("#")[0])))
    print(f"## {title} ({', '.join(dict.fromkeys(r[0] for r in done))})\n")
    print(intro + " Commands: " + "; ".join(commands) + "\n")
    print(f"| trace | policy | BSLD, {split} | wait (s), {split} | against the shipped model: BSLD, wait "
          "(A − B ± SE) | verdict | trainer's held-out BSLD / wait (recorded, not used) |")
    print("|---|---|---|---|---|---|---|")
    shown: set[str] = set()
    by = (load_side(str(ROOT / busiest[0])), busiest[1]) if busiest else None
    for trace, shipped, shipped_label, new, label in done:
        ship = load_side(str(ROOT / shipped))
        rows = [] if trace in shown else [*((b, f"`{b.split('#')[1]}`") for b in bases[trace]),
                                          (shipped, shipped_label)]
        shown.add(trace)
        for spec, name in (*rows, (new, label)):
            side = load_side(str(ROOT / spec))
            diffs = paired_diffs(side, ship, busiest_by=by)  # A's means over the windows compared
            vs, verdict = "-", "-"
            if spec != shipped:
                vs = diff_cells(diffs)
                verdict = overall(diffs)
            held = trainer_heldout(side.policy) if spec == new else "-"
            print(f"| {trace} | {name} | {diffs[0].a:.3f} | {diffs[1].a:.1f} | {vs} | {verdict} | {held} |")
    print()
    return done


def main() -> int:
    if "--summary" in sys.argv:
        summary()
        return 0
    for trace in TRACES:
        res = load(trace)
        if res is None:
            print(f"## {trace}\n\n(not evaluated)\n")
            continue
        pols = res["policies"]
        print(f"## {trace}\n")
        print(f"`{res['config']['command']}`\n")
        print("| policy | BSLD | wait mean (s) | wait p95 (s) | wait max (s) | JCT mean (s) | GPU util |")
        print("|---|---|---|---|---|---|---|")
        best_b = min(v["bsld"] for v in pols.values())
        best_w = min(v["wait_mean"] for v in pols.values())
        for name, m in pols.items():
            b = f"**{m['bsld']:.2f}**" if m["bsld"] == best_b else f"{m['bsld']:.2f}"
            w = f"**{m['wait_mean']:.0f}**" if m["wait_mean"] == best_w else f"{m['wait_mean']:.0f}"
            print(f"| `{name}` | {b} | {w} | {m['wait_p95']:.0f} | {wait_max(m)} | {m['jct_mean']:.0f} | "
                  f"{m['utilization']:.3f} |")
        ev = load(f"{trace}-event")
        if ev is not None:
            for name, m in ev["policies"].items():
                print(f"| `{name}` (event mode) | {m['bsld']:.2f} | {m['wait_mean']:.0f} | "
                      f"{m['wait_p95']:.0f} | {wait_max(m)} | {m['jct_mean']:.0f} | {m['utilization']:.3f} |")
        print()
        if any(k.startswith("rltune:") for k in pols):
            name, r = learned(res)
            heur = heuristics(pols, name)
            beaten_b = [k for k, v in heur.items() if r["bsld"] < v["bsld"]]
            beaten_w = [k for k, v in heur.items() if r["wait_mean"] < v["wait_mean"]]
            lost = sorted(set(heur) - (set(beaten_b) & set(beaten_w)))
            print(f"RLTune (daemon mode) vs FCFS: BSLD {pct(r['bsld'], pols['fcfs']['bsld'])}, wait "
                  f"{pct(r['wait_mean'], pols['fcfs']['wait_mean'])} (paper, BSLD: "
                  f"{paper(PAPER_VS_FCFS, trace)}). vs multifactor: BSLD "
                  f"{pct(r['bsld'], pols['multifactor']['bsld'])}, wait "
                  f"{pct(r['wait_mean'], pols['multifactor']['wait_mean'])} (paper, BSLD: "
                  f"{paper(PAPER_VS_MULTIFACTOR, trace)}). Lower BSLD **and** wait than: "
                  f"{', '.join(sorted(set(beaten_b) & set(beaten_w))) or 'none'}; not both against: "
                  f"{', '.join(lost) or 'none'}.\n")
            base = res["config"].get("models", {}).get(name, {}).get("base_policy", "sjf")
            own = pols.get(f"daemon:{base}")
            if own is not None:
                print(f"Against its own base policy applied by the daemon without a model (`daemon:{base}`, "
                      f"same cycles and guard): BSLD {pct(r['bsld'], own['bsld'])}, wait "
                      f"{pct(r['wait_mean'], own['wait_mean'])}: what the learned actor adds.\n")
            wins = ", ".join(f"{o} {b}/{n} and {w}/{n}" for o, b, w, n in window_wins(res, name))
            print(f"Window by window (lower BSLD / lower mean wait than): {wins}.\n")
        judged = {k: v["vs_multifactor"] for k, v in pols.items() if "vs_multifactor" in v}
        if judged:
            print("Job by job against Slurm's multifactor order on the same windows (hurt / helped: waited "
                  "more than 10 minutes longer / shorter):\n")
            print(hurt_table(judged) + "\n")
    naive_vs_full("Ablation (philly): naive vs full",
                  "naive = the 5 raw job columns, no engineered features or sampling, no MILP; full = the 17 "
                  "features (and, for the current Philly model, `hist_time`) sampled to 8 (9) + the MILP "
                  "over the top 16.", "philly-naive", "philly-naive-event")
    naive_vs_full("Naive vs full with the same recipe (philly)",
                  "The shipped recipe (cross-entropy search against QSSF, seed 1: run H) with the paper's "
                  "naive inputs instead of the engineered ones: [README.md](results/ablation-cem/README.md).",
                  "ablation-cem/daemon", "ablation-cem/event")
    guard_section()
    stretch_choice()
    guard_reference()
    base_choice()
    model_choice()
    model_vs_base()
    temporal_validation()
    qssf_history()
    history_input()
    residual_models()
    residual_contended()
    cem_models()
    recent_windows()
    helios_recent()
    helios_fresh()
    testbed_fresh()
    backfill_reservations()
    testbed_bf500()
    bf500_traces()
    variant_table("MILP vs greedy placement (philly, the same learned actor)", "", ("mode", "placement"),
                  [("philly-event", "event", "MILP"), ("philly-greedy-event", "event", "greedy"),
                   ("philly-noguard", "daemon, guard off", "MILP"),
                   ("philly-greedy-noguard", "daemon, guard off", "greedy")])
    pure = load("philly-pure-event")
    if pure:
        print("## Placement effects off (philly, event mode)\n")
        print(f"`{pure['config']['command']}`\n")
        print("| policy | BSLD | wait mean (s) |")
        print("|---|---|---|")
        for name, m in pure["policies"].items():
            print(f"| `{name}` | {m['bsld']:.2f} | {m['wait_mean']:.0f} |")
        print()
    # like for like: the react-0 runs measured the guard against multifactor order only
    react_rows = [(t, load(f"{t}-refpriority") or load(t), load(f"{t}-react0")) for t in TRACES]
    if any(r is not None for _, _, r in react_rows):
        print("## Queue checks (`react`, daemon mode)\n")
        print("By default the daemon checks the queue every 5 s and re-plans at once when a job arrived, "
              "started or ended; `--react 0` re-plans only every 60 s. Both columns with the guard "
              "measured against multifactor order only (the default when these runs were made; the "
              "5-s column is the held-out run kept as `<trace>-refpriority`). Commands: "
              + "; ".join(f"`{r['config']['command']}`" for _, _, r in react_rows if r) + "\n")
        print("| trace | policy | BSLD, react 5 s | BSLD, 60 s only | wait (s), react 5 s | "
              "wait (s), 60 s only |")
        print("|---|---|---|---|---|---|")
        for t, base, r in react_rows:
            if base is None or r is None:
                continue
            for name, m in r["policies"].items():
                o = base["policies"][name]
                mark, omark = dagger(name, r), dagger(name, base)
                print(f"| {t} | `{name}` | {o['bsld']:.2f}{omark} | {m['bsld']:.2f}{mark} | "
                      f"{o['wait_mean']:.0f}{omark} | {m['wait_mean']:.0f}{mark} |")
        if any((r is not None and earlier(r)) or (b is not None and earlier(b)) for _, b, r in react_rows):
            print("\n† measured with the model shipped before this directory was retrained.")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
