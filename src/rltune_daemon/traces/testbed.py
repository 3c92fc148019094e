"""The RLTune §5.6 end-to-end workload on our local Slurm test cluster (same node names and shapes).

Cluster (partition ``gpu``): ``p100-[1-2]`` 4 x P100, 8 CPUs, 64,000 MB; ``k80-[1-2]`` 2 x K80, 8 CPUs,
32,000 MB; ``m40-1`` 1 x M40, 4 CPUs, 16,000 MB: 13 GPUs. The paper describes the jobs only as 1,024
"deep learning fine-tuning and inference" jobs including LLM jobs on one GPU, several GPUs or several
nodes; the mix below is ours:

| class | share | GPUs (nodes) | runtime | type constraint |
|---|---|---|---|---|
| llm-infer | 30 % | 1 | 2-15 min | 15 % pinned to one random type |
| llm-finetune | 20 % | 1 | 15-60 min | 30 % ``p100`` (memory) |
| llm-finetune-multi | 12 % | 2 or 4 | 20-60 min | 25 % ``p100``; 4 GPUs fit only a P100 node anyway |
| llm-finetune-multinode | 6 % | 8 on both P100 nodes (2), or 4 on both K80 nodes (2) | 30-70 min | pinned |
| cnn-train | 32 % | 1 or 2 | 5-45 min | 10 % ``k80`` |

Runtimes are log-uniform in the range. Arrivals are Poisson at offered load ``load`` of the 13 GPUs
(default 0.9: real queueing, since multi-GPU jobs fragment the small nodes). Users: 2-3 per account
(``nlp`` for LLM fine-tunes, ``serving`` for inference, ``vision`` for CNNs), Zipf popularity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rltune_daemon.domain.cluster import ClusterSpec, NodeSpec, PartitionSpec
from rltune_daemon.domain.workload import Workload
from rltune_daemon.traces.assemble import RawJobs, assemble
from rltune_daemon.traces.context import LoadContext
from rltune_daemon.traces.options import MAX_JOBS
from rltune_daemon.traces.sampling import poisson_arrivals, rng_for, zipf_choice

PARTITION = "gpu"
DEFAULT_JOBS = 1024
DEFAULT_LOAD = 0.9
MIN = 60.0

# (name, share, account, runtime range (s))
CLASSES: tuple[tuple[str, float, str, tuple[float, float]], ...] = (
    ("llm-infer", 0.30, "serving", (2 * MIN, 15 * MIN)),
    ("llm-finetune", 0.20, "nlp", (15 * MIN, 60 * MIN)),
    ("llm-finetune-multi", 0.12, "nlp", (20 * MIN, 60 * MIN)),
    ("llm-finetune-multinode", 0.06, "nlp", (30 * MIN, 70 * MIN)),
    ("cnn-train", 0.32, "vision", (5 * MIN, 45 * MIN)),
)
USERS = {"serving": 2, "nlp": 3, "vision": 3}


def cluster() -> ClusterSpec:
    shapes = (("p100", 2, 4, 8, 64_000), ("k80", 2, 2, 8, 32_000), ("m40", 1, 1, 4, 16_000))
    nodes = tuple(
        NodeSpec(f"{t}-{i}", t, g, c, m, (PARTITION,))
        for t, count, g, c, m in shapes
        for i in range(1, count + 1)
    )
    return ClusterSpec(
        "testbed",
        nodes,
        (PartitionSpec(PARTITION),),
        notes="local Slurm testbed (RLTune §5.6): 2 x 4 P100, 2 x 2 K80, 1 x 1 M40",
    )


def generate(
    n: int = DEFAULT_JOBS, seed: int = 0, load: float = DEFAULT_LOAD
) -> tuple[RawJobs, dict[str, Any]]:
    rng = rng_for(seed, "testbed/jobs")
    cls = rng.choice(len(CLASSES), size=n, p=[c[1] for c in CLASSES])
    u = rng.random((n, 4))  # runtime, size, pin, pin-type draws: fixed per job, whatever its class
    lo = np.array([c[3][0] for c in CLASSES])[cls]
    hi = np.array([c[3][1] for c in CLASSES])[cls]
    runtime = np.round(np.exp(np.log(lo) + u[:, 0] * (np.log(hi) - np.log(lo))))
    gpus = np.ones(n, dtype=np.int64)
    nodes = np.zeros(n, dtype=np.int64)
    types: list[tuple[str, ...]] = []
    for i, (c, us, up, ut) in enumerate(zip(cls.tolist(), u[:, 1], u[:, 2], u[:, 3], strict=True)):
        name = CLASSES[c][0]
        pinned: tuple[str, ...] = ()
        if name == "llm-infer":
            pinned = (("p100", "k80", "m40")[int(ut * 3)],) if up < 0.15 else ()
        elif name == "llm-finetune":
            pinned = ("p100",) if up < 0.30 else ()
        elif name == "llm-finetune-multi":
            gpus[i] = 2 if us < 0.6 else 4
            pinned = ("p100",) if up < 0.25 else ()
        elif name == "llm-finetune-multinode":
            big = us < 0.6
            gpus[i], nodes[i] = (8, 2) if big else (4, 2)
            pinned = ("p100",) if big else ("k80",)
        else:  # cnn-train
            gpus[i] = 1 if us < 0.7 else 2
            pinned = ("k80",) if up < 0.10 else ()
        types.append(pinned)
    width = max(4, len(str(n)))
    rate = load * cluster().total_gpus / float(np.mean(gpus * runtime))
    submit = poisson_arrivals(rng_for(seed, "testbed/arrivals"), n, rate)
    accounts = [CLASSES[c][2] for c in cls.tolist()]
    user_rng = rng_for(seed, "testbed/users")
    users = [""] * n
    for account, k in USERS.items():
        rows = [i for i, a in enumerate(accounts) if a == account]
        for i, who in zip(rows, zipf_choice(user_rng, len(rows), k).tolist(), strict=True):
            users[i] = f"{account}{who + 1}"
    raw = RawJobs(
        ids=[f"tb-{i:0{width}d}" for i in range(1, n + 1)],  # tb-0001; tb-00001 from 10,000 jobs
        submit=submit,
        runtime=runtime,
        gpus=gpus,
        nodes=nodes,
        gpu_types=types,
        user=users,
        account=accounts,
        partition=[PARTITION] * n,
        qos=[""] * n,
    )
    meta = {
        "generator": {"jobs": n, "load": load, "rate_per_s": rate},
        "job_classes": {c[0]: int(np.count_nonzero(cls == k)) for k, c in enumerate(CLASSES)},
    }
    return raw, meta


def load(ctx: LoadContext) -> Workload:
    n = ctx.opts.integer("jobs", DEFAULT_JOBS, lo=1, hi=MAX_JOBS)
    target = ctx.opts.number("load", DEFAULT_LOAD, lo=1e-3, hi=10.0)
    cap = ctx.opts.seconds("max_time", ctx.default_cap)
    ctx.opts.finish()
    raw, meta = generate(n, ctx.seed, target)
    spec = ctx.cluster or cluster()
    raw = ctx.partitions(raw, spec)
    return assemble(
        "testbed",
        spec,
        raw,
        estimates=ctx.estimates(raw, "testbed"),
        seed=ctx.seed,
        cap=cap,
        meta={"source": "generated", **meta},
    )
