"""Write workloads back out: jobs as the plain CSV trace format, the cluster as ``scontrol -o show
node``-style lines. Both load again unchanged (``load_workload(csv, cluster=path)``), which is how a
generated workload (e.g. ``testbed``) reaches tools outside this package, such as a submitter."""

from __future__ import annotations

import csv
from pathlib import Path

from rltune_daemon.domain.cluster import ClusterSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import UserError
from rltune_daemon.traces.csvfile import COLUMNS


def write_csv(workload: Workload, path: str | Path) -> int:
    """Jobs as ``id,submit,runtime,gpus,time_limit,gpu_type,user,account,partition,cpus,mem_mb,nodes``."""
    try:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            out = csv.writer(fh)
            out.writerow(COLUMNS)
            for j in workload.jobs:
                out.writerow(
                    [
                        j.id,
                        repr(j.submit),
                        repr(j.runtime),
                        j.gpus,
                        repr(j.time_limit),
                        "|".join(j.gpu_types),
                        j.user,
                        j.account,
                        j.partition,
                        j.cpus,
                        j.mem_mb,
                        j.nodes,
                    ]
                )
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror})") from None
    return len(workload.jobs)


def cluster_lines(cluster: ClusterSpec) -> list[str]:
    """One ``NodeName=`` line per node, then one ``PartitionName=`` line per partition (first = default)."""
    out = []
    for n in cluster.nodes:
        gres = f"Gres=gpu:{n.gpu_type}:{n.gpus} " if cluster.resource == "gpu" and n.gpus else ""
        parts = ",".join(n.partitions)
        out.append(f"NodeName={n.name} {gres}CPUTot={n.cpus} RealMemory={n.mem_mb} Partitions={parts}")
    for i, p in enumerate(cluster.partitions):
        default = "YES" if i == 0 else "NO"
        out.append(
            f"PartitionName={p.name} Default={default} PriorityJobFactor={p.priority_job_factor} "
            f"PriorityTier={p.priority_tier}"
        )
    return out


def write_cluster(cluster: ClusterSpec, path: str | Path) -> int:
    try:
        Path(path).write_text("\n".join(cluster_lines(cluster)) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror})") from None
    return len(cluster.nodes)
