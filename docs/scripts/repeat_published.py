"""Repeat published evaluations with ``rltune evaluate --recipe`` and tabulate whether they still hold.

Usage: .venv/bin/python docs/scripts/repeat_published.py [--minutes M] [--jobs N] [DIR ...]

Without DIRs: every ``docs/results/**/results.json`` run, cheapest first (by the wall time it
recorded), until M minutes (default 60) of recorded wall time are planned; the rest are listed as not
repeated. With DIRs: those runs, merged into the existing table. A learned policy whose directory holds
another model now is run from that model restored out of git history (``--model``, matched by the actor
hash the run recorded). Writes docs/results/repeat/README.md (a verdict per run) and results.json.
Verdicts: ``same`` (every metric of every window), ``changed since`` (numbers moved where ``--recipe``
noted a change since the run: a model replaced and not in git, ``daemon:multifactor``'s rule),
``differs`` (with `--recipe`'s lines), ``cannot repeat``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.recipe import (
    differences,
    explicit_command,
    read_results,
    recipe_config,
    renamed_policies,
)
from rltune_daemon.evaluate.runner import evaluate
from rltune_daemon.policies.learned import MODEL_FILE, actor_sha256

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results"
OUT = RESULTS / "repeat"
RESTORED = Path("/tmp/rltune-restored")  # models restored from git for --model


def runs() -> list[tuple[float, Path]]:
    """(recorded wall seconds, directory) of every published run, cheapest first."""
    found = []
    for path in sorted(RESULTS.glob("**/results.json")):
        if OUT in path.parents:
            continue
        cfg = json.loads(path.read_text())["config"]
        found.append((float(cfg.get("wall_seconds", 0.0)), path.parent))
    return sorted(found, key=lambda x: x[0])


def restore(path: str, sha: str) -> tuple[Path, str] | None:
    """The model directory ``path`` held when its actor had hash ``sha``, written from git history into
    /tmp/rltune-restored/<sha> (with the commit), or None when no commit of ``path`` has that actor."""
    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, check=False).stdout

    for rev in git("log", "--format=%H", "--", f"{path}/{MODEL_FILE}").decode().split():
        if hashlib.sha256(git("show", f"{rev}:{path}/{MODEL_FILE}")).hexdigest()[:16] == sha:
            out = RESTORED / sha
            out.mkdir(parents=True, exist_ok=True)
            for name in (MODEL_FILE, "manifest.json"):
                (out / name).write_bytes(git("show", f"{rev}:{path}/{name}"))
            return out, rev[:7]
    return None


def restored_models(cfg: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """``--model`` pairs for a run's learned policies (``cfg``: its results' config) whose directory holds
    another model now and whose model git still has, and a line per restored model."""
    pairs, lines = {}, []
    for spec, ident in (cfg.get("models") or {}).items():
        path, want = spec.partition(":")[2], (ident or {}).get("actor_sha256")
        if want and actor_sha256(Path(path)) != want and (found := restore(path, want)):
            pairs[path] = str(found[0])
            lines.append(f"{spec}: actor {want} restored from git {found[1]}")
    return pairs, lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--rewrite", action="store_true",
                    help="only rebuild README.md from the repeat's results.json (no simulation)")
    ap.add_argument("dirs", nargs="*", type=Path,
                    help="repeat these runs and merge them into the existing results.json")
    a = ap.parse_args()
    done = json.loads((OUT / "results.json").read_text()) if (OUT / "results.json").is_file() else None
    if a.rewrite and done:
        write(done["repeated"], [Path(d) for d in done["not_repeated"]], done["command"])
        return 0
    todo = [(0.0, d.resolve()) for d in a.dirs] if a.dirs else runs()
    plan, skipped, total = [], [], 0.0
    for wall, d in todo:
        if a.dirs or total + wall <= a.minutes * 60:
            plan.append(d)
            total += wall
        else:
            skipped.append(d)
    mine = {str(d.relative_to(REPO)) for d in plan}
    kept = [r for r in done["repeated"] if r["run"] not in mine] if a.dirs and done else []
    left = [Path(d) for d in done["not_repeated"] if d not in mine] if a.dirs and done else []
    this = ".venv/bin/python docs/scripts/repeat_published.py " + " ".join(sys.argv[1:])
    command = f"{done['command']}`, then `{this}" if a.dirs and done else this  # shown in backticks
    rows: list[dict[str, Any]] = []
    for i, d in enumerate(plan, 1):
        rel = str(d.relative_to(REPO))
        recorded = read_results(d)
        models, restored = restored_models(recorded["config"])
        cfg, notes = recipe_config(d, jobs=a.jobs, models=models, recorded=recorded)
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                results = evaluate(cfg, progress=False)
        except UserError as exc:  # e.g. a model directory removed and not in git: say so, go on
            moved, verdict = [str(exc)], "cannot repeat"
        else:
            moved = differences(recorded, results, renamed=renamed_policies(models))
            verdict = "same" if not moved else ("changed since" if notes else "differs")
        rows.append({"run": rel, "verdict": verdict, "lines": moved, "notes": notes, "restored": restored,
                     "seconds": round(time.perf_counter() - t0, 1), "command": explicit_command(cfg)})
        print(f"[{i}/{len(plan)}] {rel}: {verdict} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr,
              flush=True)
        for line in restored + notes + moved:
            print(f"    {line}", file=sys.stderr)
        write(kept + rows, left + [d.relative_to(REPO) for d in plan[i:] + skipped], command)
    print(f"wrote {OUT / 'README.md'}", file=sys.stderr)
    return 0


VERDICTS = ("same", "changed since", "differs", "cannot repeat")


def fallbacks_then(run: str) -> str:
    """The placement-MILP fallbacks the recorded run counted: "not counted" before the count existed
    (2026-11-24, 18:37; CBC's 10-s stall, a timeout fallback, was fixed at 20:04 the same day)."""
    pols = json.loads((REPO / run / "results.json").read_text())["policies"]
    counts = [m.get("milp_fallbacks") for m in pols.values()]
    if any(c is None for c in counts):
        return "not counted"
    total = {r: sum(c.get(r, 0) for c in counts if c) for r in sorted({r for c in counts if c for r in c})}
    return ", ".join(f"{n} {r}" for r, n in total.items() if n) or "0"


def write(rows: list[dict[str, Any]], left: list[Path], command: str) -> None:
    """docs/results/repeat/README.md and results.json for the runs repeated so far."""
    OUT.mkdir(parents=True, exist_ok=True)
    payload = {"command": command, "repeated": rows, "not_repeated": [str(d) for d in left]}
    (OUT / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    md = ["# Published evaluations, repeated", "",
          f"Commands: `{command.strip()}` (each run through `rltune evaluate --recipe DIR`: the settings "
          "its results.json recorded, cheapest first by its recorded wall time; a model replaced since is "
          "restored from git by the actor hash the run recorded).", "",
          f"{len(rows)} runs repeated: {counts['same']} same in every metric of every window (relative "
          f"difference at most 1e-9), {counts['changed since']} moved where a model or the code changed "
          "since the run (its note says which), "
          f"{counts['differs']} differ, {counts['cannot repeat']} cannot be repeated. {len(left)} runs "
          "not repeated (over the time budget).", "",
          "| run | verdict | seconds | MILP fallbacks the run recorded | what moved |",
          "|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: str(r["run"])):
        what = "; ".join(r.get("restored", []) + r["notes"] + r["lines"]).replace("|", "\\|") or "-"
        md.append(f"| `{r['run']}` | {r['verdict']} | {r['seconds']:.0f} | {fallbacks_then(r['run'])} | "
                  f"{what} |")
    if left:
        md += ["", "Not repeated: " + ", ".join(f"`{d}`" for d in left)]
    (OUT / "README.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    sys.exit(main())
