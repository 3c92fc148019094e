"""Independent check that a set of allocations can start together on the current cluster state.

A placer's output is verified with this before it is returned, so a modelling or decoding error
becomes a counted fallback instead of an over-committed node.
"""

from __future__ import annotations

import numpy as np

from rltune_daemon.placement.allocate import Allocation
from rltune_daemon.placement.context import PlacementContext


def joint_violation(ctx: PlacementContext, allocations: dict[int, Allocation]) -> str:
    """"" when every allocation is valid for its job and all fit together, else what is wrong."""
    cl, sh, table = ctx.cluster, ctx.shapes, ctx.table
    n = cl.n_nodes
    gpus, cpus, mem = (np.zeros(n, dtype=np.int64) for _ in range(3))
    for row, a in allocations.items():
        nodes = a.nodes
        if len(nodes) != len(np.unique(nodes)) or len(nodes) != int(sh.k[row]):
            return f"row {row}: {len(nodes)} nodes, job needs {int(sh.k[row])} distinct"
        if int(a.gpus.sum()) != int(table.gpus[row]) or (a.gpus < 0).any():
            return f"row {row}: allocation has {int(a.gpus.sum())} GPUs, job wants {int(table.gpus[row])}"
        ok, _ = ctx.elig.get(*sh.group_keys[int(sh.group[row])])
        if not (ok[nodes] & cl.usable[nodes]).all():
            return f"row {row}: node not eligible or not usable"
        np.add.at(gpus, nodes, a.gpus)
        np.add.at(cpus, nodes, a.cpus)
        np.add.at(mem, nodes, a.mem)
    checks = (("GPUs", gpus, cl.gpus_free), ("CPUs", cpus, cl.cpus_free), ("memory", mem, cl.mem_free))
    for what, used, free in checks:
        over = np.flatnonzero(used > free)
        if len(over):
            i = int(over[0])
            return f"node {cl.names[i]}: {what} {int(used[i])} > free {int(free[i])}"
    return ""
