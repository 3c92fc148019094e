"""What the live benchmarks (``bench soak``, ``bench cycle``) put on the local Slurm: every GPU busy, a
queue of ``n`` pending GPU jobs, and a user's ``sbatch`` timed while the daemon works."""

from __future__ import annotations

import json
import multiprocessing as mp
import statistics
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rltune_daemon.errors import UserError

NODE_GPUS = {"p100-1": "p100:4", "p100-2": "p100:4", "k80-1": "k80:2", "k80-2": "k80:2", "m40-1": "m40:1"}


@dataclass
class Latency:
    """A user's ``sbatch`` (a held 1-minute job) timed every ``every`` seconds while ``running``."""

    env: dict[str, str]
    every: float = 0.1
    times: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, seconds)
    ids: list[str] = field(default_factory=list)

    def once(self) -> None:
        t0 = time.monotonic()
        res = subprocess.run(["sbatch", "--parsable", "-H", "-t", "1", "-o", "/dev/null", "-J", "latency",
                              "--wrap", "true"], env=self.env, capture_output=True, text=True, timeout=120,
                             check=False, cwd="/tmp")
        self.times.append((t0, time.monotonic() - t0))
        if res.returncode == 0:
            self.ids.append(res.stdout.strip().split(";")[0])

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.once()
            stop.wait(self.every)


def latency_stats(values: Sequence[float], median_key: str = "median_ms") -> dict[str, float]:
    """n, median, p95 and max of ``sbatch`` seconds, in ms (empty: {}); ``median_key`` names the
    median as each benchmark's published results do."""
    if not values:
        return {}
    v = sorted(values)
    return {"n": len(v), median_key: round(1000 * statistics.median(v), 1),
            "p95_ms": round(1000 * v[min(len(v) - 1, int(0.95 * len(v)))], 1),
            "max_ms": round(1000 * v[-1], 1)}


def fill_queue(n: int, env: dict[str, str]) -> None:
    """``n`` pending 1-4 GPU jobs with time limits of 10 min to 5 h, four sbatch loops at once."""
    script = ('for i in "$@"; do sbatch -o /dev/null -J "soak$i" --gres=gpu:$(( i % 4 + 1 )) '
              '-t $(( i % 290 + 10 )) --wrap "sleep 60" > /dev/null || exit 1; done')
    procs = []
    for part in range(4):
        ids = [str(i) for i in range(part, n, 4)]
        procs.append(subprocess.Popen(["bash", "-c", script, "_", *ids], env=env, cwd="/tmp"))
    for p in procs:
        if p.wait() != 0:
            raise UserError("sbatch failed while filling the soak queue (MaxJobCount?)")


# ---- the user's sbatch, from its own process ---------------------------------------------------------


def split_latency(samples: Sequence[tuple[float, float]], cycles: Sequence[tuple[float, float]],
                  excluded: Sequence[tuple[float, float]] = ()) -> dict[str, list[float]]:
    """A user's ``sbatch`` (start, seconds) samples split by whether the call overlapped a cycle
    (``inside``) or fell wholly between cycles (``between``); calls wholly before the first cycle or
    after the last one are in neither, and so are calls that overlap an ``excluded`` span (the bench
    cancelling the user's held jobs)."""
    if not cycles:
        return {"inside": [], "between": []}
    lo, hi = cycles[0][0], cycles[-1][1]

    def overlaps(a: float, b: float, spans: Sequence[tuple[float, float]]) -> bool:
        return any(a <= y and x <= b for x, y in spans)

    out: dict[str, list[float]] = {"inside": [], "between": []}
    for t, s in samples:
        if t + s < lo or t > hi or overlaps(t, t + s, excluded):
            continue
        out["inside" if overlaps(t, t + s, cycles) else "between"].append(s)
    return out


def _latency_child(env: dict[str, str], every: float, path: str, stop: Any) -> None:
    """A user submitting a held 1-minute job every ``every`` s until ``stop`` is set; (monotonic start,
    seconds) pairs to ``path``. Its own process, so the daemon's work in the bench process cannot delay
    the clock that times it."""
    lat = Latency(env, every=every)
    while not stop.is_set():
        lat.once()
        stop.wait(every)
    Path(path).write_text(json.dumps(lat.times))


class UserSbatch:
    def __init__(self, env: dict[str, str], every: float, path: Path) -> None:
        ctx = mp.get_context("spawn")
        self.stop = ctx.Event()
        self.path = path
        self.proc = ctx.Process(target=_latency_child, args=(env, every, str(path), self.stop))

    def __enter__(self) -> UserSbatch:
        self.proc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.proc.join(timeout=180)
        if self.proc.is_alive():
            self.proc.kill()

    def samples(self) -> list[tuple[float, float]]:
        if not self.path.exists():
            return []
        return [(float(t), float(s)) for t, s in json.loads(self.path.read_text())]

