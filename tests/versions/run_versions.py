"""``make test-versions SLURM_SRC=... VERSIONS="23.11 24.11 25.11"``: the real-Slurm part of the suite, and
what only a real release can show, on each Slurm release sites run.

For each release (root, Debian 12; ``22.05`` means Debian's own packages, no build):

1. **build** it once into ``$RLTUNE_SLURM_CACHE/<version>`` (``deploy/local-slurm/build.sh``) and put its
   ``bin``/``sbin`` first on PATH, so the local cluster, the tests and the daemon all run that release;
2. **capture** the reader's commands on it into ``tests/fixtures/slurm/captured-<series>`` (the parser
   tests of ``make test`` then run on every captured release);
3. **suite**: the real-Slurm tests (reader, writer, undo/restore, faults, hostile input, rate limit,
   hints, history, replay; ``SUITE``), ``-m slurm``;
4. **probe**: ``rltune-daemon --check-config --probe`` on a local cluster of that release (with Slurm's
   metrics endpoint on where the release has one);
5. **replay**: ``rltune replay`` of a 24-job window, two arms (Slurm's multifactor and ``daemon:sjf``);
6. **operator** (23.02+): ``rltune bench soak --operator``: 10,000 pending jobs, the daemon as a non-root
   Operator under ``rl_enable``, its cycles and a SIGTERM restore; refused RPCs counted by slurmctld;
7. **pyslurm** (25.11): pyslurm built against this release (once, in its cache), the pyslurm-vs-CLI
   comparison test, and ``rltune bench cycle --readers cli,pyslurm`` at 1,024 and 10,000 pending.

Each step's outcome, seconds and output tail go to ``OUT/<series>.json``; the end prints the table of
every release run so far. ``--skip`` leaves steps out (e.g. ``operator,pyslurm`` for a quick run);
a step left out keeps its result from the last run that had it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SUITE = (
    "tests/slurm/test_slurm_integration.py", "tests/slurm/test_slurm_history.py",
    "tests/slurm/test_slurm_release.py", "tests/slurm/test_slurm_pyslurm_live.py",
    "tests/service/test_service_slurm.py", "tests/service/test_service_slurm_hints.py",
    "tests/service/test_service_faults.py", "tests/service/test_service_hostile.py",
    "tests/service/test_service_ratelimit.py", "tests/service/test_service_milp_hints.py",
    "tests/service/test_service_history.py", "tests/replay/test_replay_slurm.py",
    "tests/service/test_service_prometheus.py",
)
STEPS = ("capture", "suite", "probe", "replay", "operator", "pyslurm")
PYSLURM = "pyslurm>=25.11,<25.12"


def say(text: str) -> None:
    print(f"[test-versions {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def version_of(env: dict[str, str]) -> str:
    out = subprocess.run(["slurmctld", "-V"], env=env, capture_output=True, text=True, check=True).stdout
    return out.split()[-1]


def build(series: str, src: str) -> Path | None:
    """The release's install prefix (built when not cached); None for Debian's own 22.05."""
    if series == "22.05":
        return None
    if not src:
        raise SystemExit(f"test-versions: Slurm {series} must be built: set SLURM_SRC (a SchedMD/slurm "
                         "clone, a release tarball or a directory of them)")
    res = subprocess.run(["bash", str(REPO / "deploy/local-slurm/build.sh"), series],
                         env=os.environ | {"SLURM_SRC": src}, stdout=subprocess.PIPE, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"test-versions: building Slurm {series} failed (see above)")
    return Path(res.stdout.strip().splitlines()[-1])


def pyslurm_python(prefix: Path) -> str:
    """A venv beside the release with pyslurm built against it and this project's packages visible."""
    venv = prefix / "pyslurm-venv"
    python = str(venv / "bin" / "python")
    check = [python, "-c", "import pyslurm"]
    if venv.exists() and subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return python
    say(f"building {PYSLURM} against {prefix} (once; about 7 minutes on 2 cores)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                          capture_output=True, text=True).stdout.strip()
    ours = subprocess.run([sys.executable, "-c", "import site; print(site.getsitepackages()[0])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "rltune-project.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    env = os.environ | {"SLURM_INCLUDE_DIR": str(prefix / "include"), "SLURM_LIB_DIR": str(prefix / "lib")}
    subprocess.run([python, "-m", "pip", "install", "-q", PYSLURM], env=env, check=True)
    return python


def run(argv: list[str], env: dict[str, str], timeout: float, cwd: Path = REPO) -> dict[str, Any]:
    t0 = time.monotonic()
    try:
        res = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                             check=False)
        rc, out = res.returncode, res.stdout + res.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = 124, f"timed out after {timeout:g} s\n{exc.stdout or ''}"
    return {"ok": rc == 0, "rc": rc, "seconds": round(time.monotonic() - t0, 1), "tail": out[-3000:]}


def junit(path: Path) -> dict[str, Any]:
    root = ET.parse(path).getroot()
    cases = root.iter("testcase")
    out: dict[str, Any] = {"passed": 0, "failed": 0, "skipped": 0, "failures": [], "skips": []}
    for case in cases:
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        skip = case.find("skipped")
        if bad is not None:
            out["failed"] += 1
            out["failures"].append(f"{name}: {(bad.get('message') or '')[:300]}")
        elif skip is not None:
            out["skipped"] += 1
            out["skips"].append(f"{name}: {(skip.get('message') or '')[:200]}")
        else:
            out["passed"] += 1
    return out


def one_release(series: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    prefix = build(series, args.src)
    env = dict(os.environ)
    if prefix is not None:
        env["PATH"] = f"{prefix}/bin:{prefix}/sbin:{env.get('PATH', '')}"
    full = version_of(env)
    say(f"Slurm {full} ({prefix or 'Debian packages'})")
    python = sys.executable
    skip = set(args.skip)
    if series == "25.11" and "pyslurm" not in skip and prefix is not None:
        python = pyslurm_python(prefix)
    done = out / f"{series}.json"  # steps of an earlier run that this one skips are kept
    earlier = json.loads(done.read_text())["steps"] if done.exists() else {}
    result: dict[str, Any] = {"series": series, "version": full, "prefix": str(prefix or "/usr"),
                              "python": python, "steps": earlier}
    rdir = out / series
    rdir.mkdir(parents=True, exist_ok=True)
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "capture": lambda: run([python, "tests/fixtures/slurm/capture.py",
                                str(REPO / "tests/fixtures/slurm" / ("captured" if series == "22.05"
                                                                     else f"captured-{series}"))], env, 600),
        "suite": lambda: suite(python, env, rdir),
        "probe": lambda: probe(python, env, series),
        "replay": lambda: run([python, "-m", "rltune_daemon.cli.main", "replay", "--window-size", "24",
                               "--speedup", "600", "--arms", "multifactor,daemon:sjf", "--no-accounting",
                               "--out", str(rdir / "replay")], env, 1800),
        "operator": lambda: run([python, "-m", "rltune_daemon.cli.main", "bench", "soak", "--sim-hours", "0",
                                 "--live-jobs", str(args.operator_jobs), "--live-cycles", "2", "--interval",
                                 "10", "--operator", "--rl-refill", "10", "--model", "daemon:sjf",
                                 "--out", str(rdir / "operator")],
                                env, 3600),
        "pyslurm": lambda: pyslurm_bench(python, env, rdir, args),
    }
    for name, fn in steps.items():
        not_here = (name == "operator" and series < "23.02") or (name == "pyslurm" and series != "25.11")
        if name in skip or not_here:
            continue
        say(f"{series}: {name}")
        result["steps"][name] = step = fn()
        say(f"{series}: {name} {'ok' if step['ok'] else 'FAILED'} ({step['seconds']:g} s)")
        done.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def suite(python: str, env: dict[str, str], rdir: Path) -> dict[str, Any]:
    xml = rdir / "suite.xml"
    step = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slurm", "-n", "2",
                f"--junitxml={xml}", *SUITE], env, 3600)
    if xml.exists():
        step.update(junit(xml))
        xml.unlink()
    return step


def probe(python: str, env: dict[str, str], series: str) -> dict[str, Any]:
    from rltune_daemon.slurm.localcluster import LocalCluster

    work = Path(tempfile.mkdtemp(prefix="rlt-probe-", dir="/tmp"))
    work.chmod(0o755)
    overrides = {"MetricsType": "metrics/openmetrics"} if series >= "25.11" else {}
    old_path = os.environ["PATH"]
    os.environ["PATH"] = env["PATH"]  # up.sh runs this release's daemons
    cluster = LocalCluster.private(work / "slurm", message_timeout=3, test_user=None,
                                   conf_overrides=overrides)
    try:
        cluster.start()
        cfg = work / "cfg.toml"
        cfg.write_text(f'state_file = "{work}/state.db"\n[slurm]\nconf = "{cluster.conf}"\n'
                       '[metrics]\nenabled = false\n')
        step = run([python, "-m", "rltune_daemon.cli.daemon", "--check-config", "--probe"],
                   env | {"RLTUNE_CONFIG": str(cfg)}, 300)
        once = run([python, "-m", "rltune_daemon.cli.daemon", "--once", "--dry-run"],
                   env | {"RLTUNE_CONFIG": str(cfg)}, 300)
        lines = step.pop("tail").splitlines()
        step["probe_lines"] = [ln for ln in lines if ln.startswith(("probe", "Slurm"))]
        step["dry_run_once"] = {"ok": once["ok"], "tail": once["tail"][-800:]}
        return step
    finally:
        cluster.stop(purge=True)
        os.environ["PATH"] = old_path


def pyslurm_bench(python: str, env: dict[str, str], rdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    test = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slurm",
                "tests/slurm/test_slurm_pyslurm_live.py"], env, 900)
    benches = {}
    for reader in ("cli", "pyslurm"):  # one process per run: libslurm serves one cluster per process
        for n in args.bench_pending.split(","):
            bench = run([python, "-m", "rltune_daemon.cli.main", "bench", "cycle", "--pending", n,
                         "--readers", reader, "--policies", "daemon:sjf", "--steady", "3", "--quiet",
                         "--out", str(rdir / "bench-cycle" / f"{reader}-{n}")], env, 3600)
            benches[f"{reader}-{n}"] = {k: v for k, v in bench.items() if k != "tail"} | {
                "tail": bench["tail"][-1500:]}
    return {"ok": test["ok"] and all(b["ok"] for b in benches.values()),
            "seconds": test["seconds"] + sum(b["seconds"] for b in benches.values()),
            "comparison": test, "bench": benches}


def _cell(steps: dict[str, Any], name: str) -> str:
    if name not in steps:
        return "-"
    step = steps[name]
    return "ok" if step["ok"] else "FAILED" + (f" (rc {step['rc']})" if "rc" in step else "")


def summary(out: Path) -> str:
    rows = ["| release | suite passed/failed/skipped | probe | replay | operator, 10,000 pending | pyslurm |",
            "|---|---|---|---|---|---|"]
    for path in sorted(out.glob("*.json")):
        r = json.loads(path.read_text())
        st = r["steps"]
        s = st.get("suite", {})
        suite_cell = f"{s.get('passed', 0)}/{s.get('failed', 0)}/{s.get('skipped', 0)}" if s else "-"
        rows.append(f"| {r['version']} | {suite_cell} | {_cell(st, 'probe')} | {_cell(st, 'replay')} | "
                    f"{_cell(st, 'operator')} | {_cell(st, 'pyslurm')} |")
    return "\n".join(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.environ.get("SLURM_SRC", ""))
    ap.add_argument("--versions", default="23.11 24.11 25.11")
    ap.add_argument("--out", type=Path, default=REPO / "docs/results/slurm-versions")
    ap.add_argument("--skip", type=lambda s: [x for x in s.replace(",", " ").split() if x], default=[])
    ap.add_argument("--operator-jobs", type=int, default=10_000)
    ap.add_argument("--bench-pending", default="1024,10000")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("test-versions: run as root (it starts Slurm clusters and builds into a cache)")
    if unknown := set(args.skip) - set(STEPS):
        raise SystemExit(f"test-versions: --skip knows {', '.join(STEPS)}, not {', '.join(sorted(unknown))}")
    args.out.mkdir(parents=True, exist_ok=True)
    ok = True
    for series in args.versions.split():
        result = one_release(series, args, args.out)
        ok = ok and all(s["ok"] for s in result["steps"].values())
    print(summary(args.out))  # the table of docs/slurm-versions.md, from every release run so far
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
