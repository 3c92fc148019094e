"""Cluster files: how a user describes the cluster behind a ``sacct``/CSV trace (``--cluster PATH``).

Two formats, detected from the content:

* a small CSV, one row per node group: ``prefix,count,gpu_type,gpus,cpus,mem_mb[,partition]``
  (header optional; rows whose first cell starts with ``#`` are comments; nodes are named
  ``<prefix>-1 .. <prefix>-<count>``; ``partition`` may list several names separated by ``|``;
  without it every node is in one partition ``default``);
* a capture of ``scontrol -o show node`` (one ``NodeName=...`` line per node; ``Gres=gpu:TYPE:N``,
  ``CPUTot``, ``RealMemory``, ``Partitions``), optionally followed by ``scontrol -o show partition``
  lines, whose ``PriorityTier``/``PriorityJobFactor`` and ``Default=YES`` (listed first) are kept.

GPUs without a type (``gpu:4``) get the type ``gpu``. A file where no node has GPUs is a CPU cluster:
``resource="cpu"`` and each node's processors are its schedulable units.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from rltune_daemon.domain.cluster import DEFAULT_PARTITION, ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.errors import InputFileError
from rltune_daemon.formats.slurm import parse_gres_gpu
from rltune_daemon.traces.limits import MAX_COUNT, MAX_NODES, bounded, parse_count, shown, too_many_gpu_types
from rltune_daemon.traces.resources import file_text, lines, text_lines

CSV_COLUMNS = ("prefix", "count", "gpu_type", "gpus", "cpus", "mem_mb", "partition")
UNTYPED_GPU = "gpu"


def load(path: str | Path) -> ClusterSpec:
    """Read a cluster file (either format)."""
    text = file_text(path)
    name = Path(path).stem
    if re.search(r"(?m)^\s*NodeName=", text):
        return parse_scontrol(text, str(path), name)
    return parse_csv(text, str(path), name)


def parse_csv(text: str, path: str, name: str = "cluster") -> ClusterSpec:
    groups: list[tuple[int, str, int, str, int, int, int, tuple[str, ...]]] = []
    reader = csv.reader(lines(text))
    has_partitions = False
    total = 0
    rows: list[tuple[int, list[str]]] = []  # with the line each starts on: quoted fields span lines
    try:
        end = reader.line_num
        for row in reader:
            rows.append((end + 1, row))
            end = reader.line_num
    except csv.Error as exc:  # e.g. a field past csv.field_size_limit(): an unclosed quote
        raise InputFileError(path, reader.line_num, f"not a readable CSV: {exc}") from None
    for line, row in rows:
        cells = [c.strip() for c in row]
        if not cells or not any(cells) or cells[0].startswith("#"):
            continue
        if [c.lower() for c in cells] == list(CSV_COLUMNS[: len(cells)]):
            continue  # the header; only the whole row tells it from a group whose prefix is "prefix"
        if len(cells) not in (6, 7):
            raise InputFileError(
                path,
                line,
                f"expected 6 or 7 columns, got {len(cells)}",
                "prefix,count,gpu_type,gpus,cpus,mem_mb[,partition]",
            )
        try:
            count, gpus, cpus, mem = int(cells[1]), int(cells[3]), int(cells[4]), int(cells[5])
        except ValueError:
            raise InputFileError(path, line, "count, gpus, cpus and mem_mb must be integers") from None
        if count < 1 or gpus < 0 or cpus < 1 or mem < 0:
            raise InputFileError(path, line, "need count >= 1, gpus >= 0, cpus >= 1, mem_mb >= 0")
        if max(gpus, cpus, mem) > MAX_COUNT:  # the simulator's int64 columns
            raise InputFileError(path, line, f"gpus, cpus and mem_mb must be at most {MAX_COUNT:,}")
        total += count
        if total > MAX_NODES:  # checked before the nodes are built one by one
            raise InputFileError(path, line, f"more than {MAX_NODES:,} nodes")
        if not cells[0]:
            raise InputFileError(path, line, "empty node name prefix")
        parts = tuple(p.strip() for p in cells[6].split("|") if p.strip()) if len(cells) == 7 else ()
        has_partitions |= bool(parts)
        gtype = cells[2] or (UNTYPED_GPU if gpus else "")
        groups.append((line, cells[0], count, gtype, gpus, cpus, mem, parts))
    if not groups:
        raise InputFileError(
            path, None, "no node groups found", "prefix,count,gpu_type,gpus,cpus,mem_mb[,partition]"
        )
    cpu_cluster = all(g[4] == 0 for g in groups)
    order: list[str] = []
    nodes: list[NodeSpec] = []
    for _line, prefix, count, gtype, gpus, cpus, mem, parts in groups:
        node_parts = parts or (DEFAULT_PARTITION,)
        order += [p for p in node_parts if p not in order]
        units = cpus if cpu_cluster else gpus
        nodes += [
            NodeSpec(f"{prefix}-{i}", "" if cpu_cluster else gtype, units, cpus, mem, node_parts)
            for i in range(1, count + 1)
        ]
    return _spec(name, nodes, [PartitionSpec(p) for p in order], "cpu" if cpu_cluster else "gpu", path)


_KV = re.compile(
    r"(?:^|\s)(NodeName|Gres|CPUTot|RealMemory|Partitions|PartitionName|PriorityTier|"
    r"PriorityJobFactor|Default)=(\S*)"
)


def parse_scontrol(text: str, path: str, name: str = "cluster") -> ClusterSpec:
    nodes: list[NodeSpec] = []
    parts: dict[str, PartitionSpec] = {}
    default_part = ""
    order: list[str] = []
    for lineno, raw in enumerate(text_lines(text), start=1):
        line = raw.strip()
        if not line:
            continue
        kv = dict(_KV.findall(line))
        if "PartitionName" in kv:
            try:
                parts[kv["PartitionName"]] = PartitionSpec(
                    kv["PartitionName"],
                    parse_count(kv.get("PriorityTier", "1"), "PriorityTier"),
                    parse_count(kv.get("PriorityJobFactor", "1"), "PriorityJobFactor"),
                )
            except ValueError as exc:
                raise InputFileError(path, lineno, "bad PriorityTier/PriorityJobFactor", str(exc)) from None
            if kv.get("Default") == "YES":
                default_part = kv["PartitionName"]
            continue
        if "NodeName" not in kv:
            raise InputFileError(
                path,
                lineno,
                "expected a NodeName=... or PartitionName=... line",
                "capture with 'scontrol -o show node'",
            )
        node = kv["NodeName"]
        if not node:
            raise InputFileError(path, lineno, "empty NodeName")
        try:
            gpus, gtype = parse_gres_gpu(kv.get("Gres", ""))
            gpus = bounded(gpus, "GPUs in Gres")
            cpus = parse_count(kv["CPUTot"], "CPUTot")
            mem = parse_count(kv.get("RealMemory", "0"), "RealMemory")
        except KeyError:
            raise InputFileError(path, lineno, f"node {shown(node)} has no CPUTot") from None
        except ValueError as exc:
            problem = f"node {shown(node)}: bad Gres/CPUTot/RealMemory"
            raise InputFileError(path, lineno, problem, str(exc)) from None
        node_parts = tuple(p for p in kv.get("Partitions", "").split(",") if p) or (DEFAULT_PARTITION,)
        order += [p for p in node_parts if p not in order]
        nodes.append(NodeSpec(node, (gtype or UNTYPED_GPU) if gpus else "", gpus, cpus, mem, node_parts))
    if not nodes:
        raise InputFileError(path, None, "no NodeName= lines found", "capture with 'scontrol -o show node'")
    if default_part in order:
        order.remove(default_part)
        order.insert(0, default_part)
    specs = [parts.get(p, PartitionSpec(p)) for p in order]
    if all(n.gpus == 0 for n in nodes):
        nodes = [NodeSpec(n.name, "", n.cpus, n.cpus, n.mem_mb, n.partitions) for n in nodes]
        return _spec(name, nodes, specs, "cpu", path)
    return _spec(name, nodes, specs, "gpu", path)


def _spec(
    name: str, nodes: list[NodeSpec], parts: list[PartitionSpec], resource: str, path: str
) -> ClusterSpec:
    problem = too_many_gpu_types(n.gpu_type for n in nodes)
    if problem:
        raise InputFileError(path, None, problem)
    try:
        return ClusterSpec(
            name,
            tuple(nodes),
            tuple(parts),
            "cpu" if resource == "cpu" else "gpu",
            notes=f"from cluster file {path}",
        )
    except ValueError as exc:
        raise InputFileError(path, None, str(exc)) from None
