"""Alibaba openb v2023: real pods; counts recomputed here straight from the bundled CSV."""

from __future__ import annotations

import csv
import lzma
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError
from rltune_daemon.traces import load_workload


def _pods() -> list[dict[str, str]]:
    raw = resources.files("rltune_daemon").joinpath("data", "alibaba", "openb_pod_list_default.csv.xz")
    return list(csv.DictReader(lzma.decompress(raw.read_bytes()).decode().splitlines()))


def test_counts(openb: Workload) -> None:
    pods = _pods()
    assert len(pods) == 8152
    pending = sum(1 for p in pods if not p["scheduled_time"])
    cpu = sum(1 for p in pods if p["scheduled_time"] and p["num_gpu"] == "0")
    fractional = sum(
        1 for p in pods if p["scheduled_time"] and p["num_gpu"] == "1" and int(p["gpu_milli"]) < 1000
    )
    assert pending == 897
    assert openb.meta["dropped"] == {"never_scheduled": pending, "cpu_only": cpu}
    assert len(openb.jobs) == 8152 - pending - cpu
    assert openb.meta["fractional_gpus_rounded_up"] == fractional > 2000
    assert min(j.gpus for j in openb.jobs) == 1


def test_job_fields(openb: Workload) -> None:
    pods = {p["name"]: p for p in _pods()}
    j = next(j for j in openb.jobs if j.id == "openb-pod-0001")
    p = pods["openb-pod-0001"]
    assert j.runtime == int(p["deletion_time"]) - int(p["scheduled_time"])
    assert (j.gpus, j.cpus, j.mem_mb, j.nodes, j.qos) == (1, 6, 12288, 1, "LS")
    assert all(j.nodes == 1 for j in openb.jobs)


def test_cluster_slice(openb: Workload) -> None:
    spec = openb.cluster
    models = Counter(n.gpu_type for n in spec.nodes)
    assert set(models) == {"g2", "t4", "p100", "v100m16", "g3", "v100m32", "a10"}
    assert all(n.name.startswith("openb-node-") for n in spec.nodes)
    assert 50 <= spec.total_gpus <= 100
    assert openb.meta["slice"] == 0.01


def test_keep_cpu_pods() -> None:
    w = load_workload("alibaba-openb", cpu_pods="keep", estimates="oracle")
    cpu_jobs = [j for j in w.jobs if j.gpus == 0]
    assert len(cpu_jobs) > 1000 and all(j.cpus >= 1 for j in cpu_jobs)
    assert "" in w.cluster.gpu_types  # CPU-only nodes added
    assert "cpu_only" not in w.meta["dropped"]


def test_other_pod_list(tmp_path: Path) -> None:
    f = tmp_path / "pods.csv"
    f.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
        "p1,4000,1024,1,1000,V100M32|G3,LS,Running,10,100,12\n"
        "p2,4000,1024,2,1000,H100,LS,Running,0,100,1\n"
    )
    w = load_workload("alibaba-openb", pods=str(f))
    assert [j.id for j in w.jobs] == ["p1"]
    assert w.jobs[0].gpu_types == ("v100m32", "g3")
    assert w.meta["dropped"] == {"unknown_gpu_type": 1}
    f.write_text("name,cpu_milli\np1,4000\n")
    with pytest.raises(InputFileError, match=r"pods.csv:1: missing column"):
        load_workload("alibaba-openb", pods=str(f))
