from __future__ import annotations

import csv
import lzma
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError
from rltune_daemon.traces import load_workload, philly
from rltune_daemon.traces.philly import PHILLY_SCALE


def _rows() -> list[list[str]]:
    raw = resources.files("rltune_daemon").joinpath("data", "philly.csv.xz").read_bytes()
    return [r for r in csv.reader(lzma.decompress(raw).decode().splitlines()) if r][1:]


def test_counts_and_order(philly: Workload) -> None:
    assert len(philly.jobs) == 82_247
    assert philly.meta["dropped"] == {}
    assert philly.meta["rows"] == 82_247
    # submit span 2017-09-04 10:30:41 .. 2017-12-22 08:02:11
    assert philly.jobs[-1].submit == pytest.approx(108.9 * 86400, rel=1e-3)
    sizes = Counter(j.gpus for j in philly.jobs)
    assert sizes[1] == 76_627 and sizes[128] == 3 and sizes[16] == 199


def test_duplicates_kept_and_sort_stable(philly: Workload) -> None:
    rows = _rows()
    assert len(rows) - len({tuple(r) for r in rows}) == 65
    keys = Counter((j.submit, j.runtime, j.gpus, j.user) for j in philly.jobs)
    assert sum(c - 1 for c in keys.values()) == 65
    # stable: jobs with equal submit keep file order (ids are file row numbers)
    by_submit: dict[float, list[int]] = {}
    for j in philly.jobs:
        by_submit.setdefault(j.submit, []).append(int(j.id.split("-")[1]))
    assert all(ids == sorted(ids) for ids in by_submit.values())


def test_user_is_virtual_cluster(philly: Workload) -> None:
    vcs = {r[4] for r in _rows()}
    assert {j.user for j in philly.jobs} == vcs and len(vcs) == 15
    assert all(j.account == j.user for j in philly.jobs)
    assert philly.jobs[0].id.startswith("philly-")


def test_cluster_scale() -> None:
    spec = philly.cluster()
    # 1/16: 23 nodes, 184 GPUs, near RLTune's own 192-GPU Philly simulation (docs/traces.md)
    assert PHILLY_SCALE == 1 / 16
    assert len(spec.nodes) == 23 and spec.total_gpus == 184
    assert philly.cluster(1 / 8).total_gpus == 352
    assert {n.gpu_type for n in spec.nodes} == {"p100"}
    assert spec.nodes[0].cpus == 48 and spec.nodes[0].mem_mb == 480_000
    assert len(spec.partitions) == 1
    quarter = load_workload("philly", scale="1/4", estimates="oracle")
    assert len(quarter.cluster.nodes) == 16 + 8 + 4 + 16 + 16 + 4 + 8 + 4 + 2 + 2 + 8
    tiny = load_workload("philly", scale=1 / 64, estimates="oracle")
    # 11 VCs of at least one node each = 88 GPUs: the 128-GPU jobs cannot run and are counted
    assert tiny.cluster.total_gpus == 88
    assert tiny.meta["dropped"] == {"infeasible": 3}
    assert len(tiny.jobs) == 82_247 - 3


def test_two_loads_give_the_same_workload() -> None:
    """Loading is deterministic (its speed is a benchmark, ``rltune bench``, not a test: a timed
    assertion failed on a loaded CI machine)."""
    a, b = load_workload("philly"), load_workload("philly")
    assert len(a.jobs) == len(b.jobs) > 0
    assert [(j.id, j.submit, j.runtime, j.gpus) for j in a.jobs[:2000]] == \
        [(j.id, j.submit, j.runtime, j.gpus) for j in b.jobs[:2000]]


def test_malformed(tmp_path: Path) -> None:
    bad = tmp_path / "philly.csv"
    bad.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,ab\n"
        "2017-10-09 07:01:55,sixty,1,66.0,ab\n"
    )
    with pytest.raises(InputFileError, match=r"philly.csv:3: bad row"):
        load_workload("philly", path=str(bad))
    bad.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-09 07:01:55,66.0,1,66.0,ab\n")
    with pytest.raises(InputFileError, match=r":2: bad timestamp"):
        load_workload("philly", path=str(bad))
    bad.write_text("when,duration\n")
    with pytest.raises(InputFileError, match=r":1: expected header"):
        load_workload("philly", path=str(bad))
    bad.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,0,0.0,ab\n")
    with pytest.raises(InputFileError, match=r":2: num_gpus must be >= 1"):
        load_workload("philly", path=str(bad))
