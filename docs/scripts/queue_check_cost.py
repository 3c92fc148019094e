"""What a queue check (``react``) costs next to a full read, on the local 5-node Slurm 22.05 cluster.

Usage (root; Slurm packages from ``make setup``): .venv/bin/python docs/scripts/queue_check_cost.py [JOBS]
Starts a throw-away cluster, submits JOBS (default 200) one-GPU jobs that pend behind GPU blockers, then
times 30 queue checks (``SlurmReader.watch``: one ``squeue``) and 30 snapshot reads (``read``: ping,
two ``squeue``, ``sprio``, ``sinfo``), interleaved so machine noise hits both alike. Prints medians.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rltune_daemon.slurm.localcluster import LocalCluster, free_port_block
from rltune_daemon.slurm.reader import SlurmReader


def main() -> int:
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="rlt-qcost-", dir="/tmp")),
                           ctld_port=free_port_block(1), slurmd_port=free_port_block(5), timeout=120)
    cluster.start()
    try:
        env = cluster.env()

        def sbatch(*args: str) -> None:
            subprocess.run(["sbatch", "-o", "/dev/null", "-D", "/tmp", *args, "--wrap", "sleep 3000"],
                           env=env, check=True, capture_output=True, cwd="/tmp")

        for node, gpus in (("p100-1", 4), ("p100-2", 4), ("k80-1", 2), ("k80-2", 2), ("m40-1", 1)):
            sbatch("-w", node, f"--gres=gpu:{gpus}")
        for k in range(jobs):
            sbatch("--gres=gpu:1", "-t", str(5 + k % 60))
        reader = SlurmReader(cluster.runner(max_calls=100))
        reader.read()
        watch, read = [], []
        for _ in range(30):
            t0 = time.perf_counter()
            reader.watch()
            t1 = time.perf_counter()
            reader.read()
            watch.append(t1 - t0)
            read.append(time.perf_counter() - t1)
        assert reader.last is not None
        w, r = statistics.median(watch), statistics.median(read)
        print(f"{len(reader.last.queue)} jobs in squeue: queue check {w * 1000:.1f} ms (1 call), "
              f"snapshot read {r * 1000:.1f} ms (5 calls), ratio {r / w:.1f}")
    finally:
        cluster.stop(purge=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
