"""Alibaba GPU cluster trace v2023 ("openb", Weng et al., ATC'23): real pods on a real node list.

Pods -> jobs: submit = ``creation_time``; runtime = ``deletion_time - scheduled_time`` (the trace's
own wait is what the simulator recomputes); never-scheduled (Pending) pods are dropped and counted.
A pod runs on one node, so ``nodes = 1``. Slurm GRES hands out whole GPUs, so a fractional request
(``gpu_milli < 1000``, GPU sharing) is rounded up to one GPU, counted in
``meta["fractional_gpus_rounded_up"]``. ``gpu_spec`` (``A|B``) becomes ``gpu_types``; ``cpu_milli`` and
``memory_mib`` become ``cpus`` (rounded up) and ``mem_mb`` (Slurm's MB are MiB), since the trace gives
them. ``qos`` is kept; the trace has no users.

CPU-only pods (``num_gpu = 0``) are dropped and counted by default (``cpu_pods=drop``): in a Slurm
site they would run in a CPU partition, RLTune's metrics are GPU metrics, and the trace authors
themselves ship a variant without them (``openb_pod_list_cpu0.csv``). ``cpu_pods=keep`` keeps them as
``gpus=0`` jobs and adds the CPU-only nodes to the cluster.

Cluster: the real node list, sliced. Replayed in time, 8k pods over 149 days barely touch 6,212 GPUs
(offered load 0.3 %, at most 71 GPUs busy at once), so the default ``slice=1/100`` keeps about 1 % of
each node shape (at least one node of every GPU model), which yields real contention late in the trace.
"""

from __future__ import annotations

import csv
import math
from collections import Counter

import numpy as np

from rltune_daemon.domain.cluster import DEFAULT_PARTITION, ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import InputFileError
from rltune_daemon.traces.assemble import RawJobs, assemble, drop_cpu_only
from rltune_daemon.traces.context import LoadContext
from rltune_daemon.traces.limits import MAX_COUNT, parse_count, seconds, shown, too_many_gpu_types
from rltune_daemon.traces.resources import data_text, file_text, lines

DEFAULT_SLICE = 1 / 100
POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_FILE = "alibaba/openb_pod_list_default.csv.xz"
NODE_FILE = "alibaba/openb_node_list_all_node.csv.xz"


def _rows(text: str, path: str, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """Non-blank rows by (stripped) column name, with the line each starts on. A row must have as many
    fields as the header: csv.DictReader would fill a short row with None and file the surplus of a
    long one (an unquoted ',' in a name) under None, every later field shifted by one."""
    reader = csv.reader(lines(text))
    out: list[tuple[int, dict[str, str]]] = []
    try:
        have = [h.strip() for h in next(reader, None) or []]
        missing = [c for c in columns if c not in have]
        if missing:
            raise InputFileError(
                path, 1, f"missing column(s) {', '.join(missing)}", f"expected {','.join(columns)}"
            )
        end = reader.line_num
        for row in reader:
            line, end = end + 1, reader.line_num
            if not any(v.strip() for v in row):
                continue
            if len(row) != len(have):
                raise InputFileError(path, line, f"expected {len(have)} fields, got {len(row)}")
            out.append((line, dict(zip(have, row, strict=True))))
    except csv.Error as exc:  # e.g. a field past csv.field_size_limit(): an unclosed quote
        raise InputFileError(path, reader.line_num, f"not a readable CSV: {exc}") from None
    return out


def parse_pods(text: str, path: str) -> RawJobs:
    ids: list[str] = []
    submit: list[float] = []
    runtime: list[float] = []
    gpus: list[int] = []
    cpus: list[int] = []
    mem: list[int] = []
    types: list[tuple[str, ...]] = []
    qos: list[str] = []
    pending = fractional = 0
    first_line: dict[str, int] = {}
    for line, r in _rows(text, path, POD_COLUMNS):
        name = r["name"].strip()
        try:
            if not r["scheduled_time"].strip():
                pending += 1
                continue
            g, milli = int(r["num_gpu"]), int(r["gpu_milli"] or 0)
            created, sched = float(r["creation_time"]), float(r["scheduled_time"])
            deleted = float(r["deletion_time"])
            c, m = int(r["cpu_milli"]), int(r["memory_mib"])
        except ValueError:
            raise InputFileError(path, line, f"pod {shown(name)}: non-numeric field") from None
        if g < 0 or c < 0 or m < 0:
            raise InputFileError(path, line, f"pod {shown(name)}: negative request")
        try:
            seconds(created, "creation_time")
            seconds(sched, "scheduled_time")
            seconds(deleted, "deletion_time")
        except ValueError as exc:
            raise InputFileError(path, line, f"pod {shown(name)}: {exc}") from None
        if max(g, -(-c // 1000), m) > MAX_COUNT:  # the int64 columns
            raise InputFileError(path, line, f"pod {shown(name)}: a request past {MAX_COUNT:,}")
        if not name:
            raise InputFileError(path, line, "empty pod name")
        if name in first_line:
            problem = f"duplicate pod name {shown(name)} (first on line {first_line[name]})"
            raise InputFileError(path, line, problem)
        first_line[name] = line
        if g == 1 and 0 < milli < 1000:
            fractional += 1
        ids.append(name)
        submit.append(created)
        runtime.append(deleted - sched)
        gpus.append(g)
        cpus.append(math.ceil(c / 1000))
        mem.append(m)
        types.append(tuple(t.strip().lower() for t in r["gpu_spec"].split("|") if t.strip()))
        qos.append(r["qos"].strip())
    n = len(ids)
    return RawJobs(
        ids=ids,
        submit=np.array(submit),
        runtime=np.array(runtime),
        gpus=np.array(gpus, dtype=np.int64),
        nodes=np.ones(n, dtype=np.int64),
        cpus=np.array(cpus, dtype=np.int64),
        mem_mb=np.array(mem, dtype=np.int64),
        gpu_types=types,
        qos=qos,
        dropped={"never_scheduled": pending},
        notes={"fractional_gpus_rounded_up": fractional},
    )


def cluster(text: str, path: str, fraction: float = DEFAULT_SLICE, cpu_nodes: bool = False) -> ClusterSpec:
    """About ``fraction`` of the nodes of every (model, GPUs, CPUs, memory) shape, at least one node
    per GPU model (largest-remainder apportionment within a model); real node names kept."""
    by_shape: dict[tuple[str, int, int, int], list[str]] = {}
    first_line: dict[str, int] = {}
    for line, r in _rows(text, path, NODE_COLUMNS):
        sn = r["sn"].strip()
        try:
            key = (
                r["model"].strip().lower(),
                parse_count(r["gpu"], "gpu"),
                parse_count(r["cpu_milli"], "cpu_milli", MAX_COUNT * 1000) // 1000,
                parse_count(r["memory_mib"], "memory_mib"),
            )
        except ValueError as exc:
            raise InputFileError(path, line, f"node {shown(sn)}: {exc}") from None
        if not sn:
            raise InputFileError(path, line, "empty node name (sn)")
        if sn in first_line:  # ClusterSpec would refuse the list with a bare ValueError
            raise InputFileError(path, line, f"duplicate node {shown(sn)} (first on line {first_line[sn]})")
        first_line[sn] = line
        if key[1] == 0 and not cpu_nodes:
            continue
        by_shape.setdefault(key, []).append(sn)
    if not by_shape:
        what = "nodes" if cpu_nodes else "GPU nodes (gpu > 0)"
        raise InputFileError(path, None, f"no {what} in the node list")
    problem = too_many_gpu_types(k[0] for k in by_shape)
    if problem:
        raise InputFileError(path, None, problem)
    per_model = Counter[str]()
    for (model, *_), names in by_shape.items():
        per_model[model] += len(names)
    nodes: list[NodeSpec] = []
    for model, total in per_model.items():
        shapes = sorted((k for k in by_shape if k[0] == model), key=lambda k: (-len(by_shape[k]), k))
        want = max(1, round(total * fraction))
        exact = [len(by_shape[k]) * want / total for k in shapes]
        take = [math.floor(x) for x in exact]
        for i in sorted(range(len(shapes)), key=lambda i: -(exact[i] - take[i]))[: want - sum(take)]:
            take[i] += 1
        for k, count in zip(shapes, take, strict=True):
            model_name, g, c, m = k
            nodes += [
                NodeSpec(name, model_name, g, c, m, (DEFAULT_PARTITION,)) for name in by_shape[k][:count]
            ]
    nodes.sort(key=lambda n: n.name)
    return ClusterSpec(
        "alibaba-openb",
        tuple(nodes),
        (PartitionSpec(DEFAULT_PARTITION),),
        notes=f"openb node list, {fraction:g} of each node shape (>= 1 node per GPU model)",
    )


def load(ctx: LoadContext) -> Workload:
    fraction = ctx.opts.number("slice", DEFAULT_SLICE, lo=1e-6, hi=1.0)
    pods_path = ctx.opts.text("pods")
    nodes_path = ctx.opts.text("nodes")
    cpu_pods = ctx.opts.choice("cpu_pods", "drop", ("drop", "keep"))
    cap = ctx.opts.seconds("max_time", ctx.default_cap)
    ctx.opts.finish()
    pod_src = pods_path or f"rltune_daemon/data/{POD_FILE}"
    node_src = nodes_path or f"rltune_daemon/data/{NODE_FILE}"
    raw = parse_pods(file_text(pods_path) if pods_path else data_text(POD_FILE), pod_src)
    if cpu_pods == "drop":
        raw = drop_cpu_only(raw, "gpu")
    spec = ctx.cluster or cluster(
        file_text(nodes_path) if nodes_path else data_text(NODE_FILE),
        node_src,
        fraction,
        cpu_nodes=cpu_pods == "keep",
    )
    meta = {"source": pod_src, "nodes_source": node_src, "slice": fraction, "cpu_pods": cpu_pods}
    raw = ctx.partitions(raw, spec)
    return assemble(
        "alibaba-openb",
        spec,
        raw,
        estimates=ctx.estimates(raw, "alibaba-openb"),
        seed=ctx.seed,
        cap=cap,
        meta=meta,
    )
