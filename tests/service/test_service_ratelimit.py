"""The daemon as a dedicated, non-root Slurm Operator under ``SlurmctldParameters=rl_enable``.

Slurm 22.05 (Debian 12) accepts ``rl_enable`` in slurm.conf but does not enforce it: per-user RPC rate
limiting arrived in 23.02, where slurmctld logs every RPC it refuses and this test also asserts there
were none (``make test-versions``). What it shows on every release is (1) the daemon runs as an
Operator (``sacctmgr ... AdminLevel=Operator``, which needs slurmdbd) and its updates land, (2) it reads
the limit from ``scontrol show config`` and paces itself, and (3) the RPCs slurmctld counted for the
daemon's user (``sdiag``'s per-user statistics, polled while it ran) never exceed what Slurm 23.02+'s
token bucket would allow (``rate_limit.c``: ``rl_bucket_size`` tokens, ``rl_refill_rate`` per
``rl_refill_period`` seconds, one per RPC, root and SlurmUser exempt).
"""

from __future__ import annotations

import json
import math
import os
import pwd
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from rltune_daemon.bench.operator import RateLimitSettings, python_for, refusals
from rltune_daemon.errors import UserError
from rltune_daemon.slurm.release import SlurmRelease
from slurm_fixtures import TEST_USER, SlurmTestCluster

pytestmark = pytest.mark.slurm
BUCKET, REFILL, PERIOD = 20, 10, 1
PARAMS = f"SlurmctldParameters={RateLimitSettings(BUCKET, REFILL, PERIOD).slurmctld_parameters()}"


def _rpcs(c: SlurmTestCluster, user: str) -> int:
    """RPCs slurmctld processed for ``user`` so far (sdiag, counted since the last reset)."""
    text = c.run("sdiag").stdout
    block = text.split("by user", 1)[1] if "by user" in text else ""
    m = re.search(rf"^\s*{re.escape(user)}\s*\(\s*\d+\)\s*count:(\d+)", block, re.MULTILINE)
    return int(m.group(1)) if m else 0


@pytest.fixture
def python_for_test_user() -> Iterator[None]:
    try:
        with python_for(TEST_USER):
            yield
    except UserError as err:
        pytest.skip(str(err))


@pytest.fixture
def operator(slurmdbd_cluster: SlurmTestCluster, python_for_test_user: None) -> Iterator[SlurmTestCluster]:
    """rl_enable in slurm.conf (reconfigured), TEST_USER an Operator; both undone afterwards."""
    c = slurmdbd_cluster
    conf = Path(c.conf)
    original = conf.read_text()
    conf.write_text(original + f"\n{PARAMS}\n")
    c.scontrol("reconfigure")
    c.run("sacctmgr", "-i", "modify", "user", TEST_USER, "set", "AdminLevel=Operator")
    c.cancel_all()
    try:
        yield c
    finally:
        c.cancel_all()
        c.run("sacctmgr", "-i", "modify", "user", TEST_USER, "set", "AdminLevel=None", check=False)
        conf.write_text(original)
        c.scontrol("reconfigure")


def _slurm_would_refuse(samples: list[tuple[float, int]]) -> list[str]:
    """Replay Slurm's bucket over (time, cumulative RPCs) samples: the moments it would run dry."""
    tokens, last_refill = float(BUCKET), math.floor(samples[0][0])
    problems = []
    for (t0, n0), (t1, n1) in pairwise(samples):
        sec = math.floor(t1)
        periods = (sec - last_refill) // PERIOD
        if periods > 0:
            tokens = min(BUCKET, tokens + periods * REFILL)
            last_refill += periods * PERIOD
        tokens -= n1 - n0
        if tokens < 0:
            problems.append(f"{n1 - n0} RPC(s) in {t1 - t0:.2f} s at t={t1:.2f}: bucket {tokens:.0f}")
    return problems


def test_an_operator_daemon_stays_inside_slurms_rpc_rate_limit(operator: SlurmTestCluster) -> None:
    c = operator
    assert "rl_enable" in c.run("scontrol", "show", "config").stdout
    c.fill_gpus()
    jobs = [c.submit("--gres=gpu:1", "-t", str(90 - k)) for k in range(30)]  # sjf reverses all of them
    c.wait_in_sprio(*jobs)
    work = Path(tempfile.mkdtemp(prefix="rlt-operator-", dir="/tmp"))
    os.chmod(work, 0o777)
    (work / "cfg.toml").write_text(
        f'base_policy = "sjf"\nstate_file = "{work}/state.json"\n'
        f'[slurm]\nconf = "{c.conf}"\nmax_updates_per_cycle = 30\n[metrics]\nenabled = false\n')
    samples: list[tuple[float, int]] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            samples.append((time.time(), _rpcs(c, TEST_USER)))
            time.sleep(0.1)

    before = _rpcs(c, TEST_USER)
    poller = threading.Thread(target=poll)
    poller.start()
    try:
        res = subprocess.run(
            ["runuser", "-u", TEST_USER, "--", "env", f"SLURM_CONF={c.conf}",
             f"RLTUNE_CONFIG={work}/cfg.toml", sys.executable, "-m", "rltune_daemon.cli.daemon", "--once"],
            capture_output=True, text=True, timeout=600, check=False, cwd="/tmp")
    finally:
        time.sleep(0.3)
        done.set()
        poller.join()
    events = [json.loads(ln) for ln in res.stderr.splitlines() if ln.startswith("{")]
    assert res.returncode == 0, res.stderr[-2000:]
    limit = next(e for e in events if e["event"] == "rate_limit")
    assert f"{BUCKET} tokens, {REFILL} per {PERIOD} s" in limit["slurm"]
    cycle = next(e for e in events if e["event"] == "cycle")
    assert cycle["outcome"] == "applied" and cycle["failed"] == 0 and cycle["priority_updates"] >= 25, cycle
    prio = c.sprio()
    assert sum(prio[j][1] != 0 for j in jobs) >= 25  # the Operator's SiteFactors landed
    order = sorted(jobs, key=lambda j: -prio[j][0])
    rank = {j: k for k, j in enumerate(jobs[::-1])}  # shortest first
    # Slurm's order is the plan's, up to the age factor slurmdbd recomputes every minute (+1 here and there)
    assert sum(rank[a] > rank[b] for a, b in pairwise(order)) <= 3
    used = samples[-1][1] - before
    assert used > BUCKET  # more RPCs than one bucket: without pacing they would have come in one burst
    assert not _slurm_would_refuse(samples)
    release = SlurmRelease.from_config(c.run("scontrol", "show", "config").stdout)
    log = Path(c.cluster.state_dir, "log", "slurmctld.log")
    if release.rate_limit_enforced:  # 23.02+: slurmctld itself says whether it refused anything
        assert "RPC rate limiting enabled" in log.read_text(errors="replace")
        assert refusals(log, pwd.getpwnam(TEST_USER).pw_uid) == {}
    restore = subprocess.run(
        ["runuser", "-u", TEST_USER, "--", "env", f"SLURM_CONF={c.conf}", f"RLTUNE_CONFIG={work}/cfg.toml",
         sys.executable, "-m", "rltune_daemon.cli.daemon", "--restore"],
        capture_output=True, text=True, timeout=600, check=False, cwd="/tmp")
    assert restore.returncode == 0, restore.stderr[-2000:]
    assert all(c.sprio()[j][1] == 0 for j in jobs)
