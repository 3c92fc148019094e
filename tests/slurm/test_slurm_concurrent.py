"""SlurmReader(concurrent=True): sprio first, then both squeue calls and sinfo at once; the same Snapshot,
checks, call budget and RPC tokens as one call after another; the first failure in call order wins.
Also the read's paused garbage collector and the read/decide micro-benchmark (bench/decide_read)."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import pytest
from fakebin import FakeBin

from rltune_daemon.bench.decide_read import CannedRunner, FakeSlurm, bench_decide_read, read_once
from rltune_daemon.gcpause import paused_gc
from rltune_daemon.slurm.errors import CallBudgetExceeded, ControllerDown, SuspectRead
from rltune_daemon.slurm.pacing import RpcBucket
from rltune_daemon.slurm.reader import SlurmReader
from rltune_daemon.slurm.runner import SlurmRunner


def _read(fake: FakeBin, concurrent: bool, **runner_kw: int) -> tuple[object, dict[str, object], list[str]]:
    runner = SlurmRunner(bin_dir=str(fake.path), **runner_kw)
    reader = SlurmReader(runner, concurrent=concurrent, wall=lambda: 1.8e9)
    fake.log.unlink(missing_ok=True)
    snap = reader.read()
    assert reader.last is not None
    info = dataclasses.asdict(reader.last)
    info.pop("seconds")
    return snap, info, fake.calls()


def test_concurrent_read_is_the_sequential_read(fake: FakeBin) -> None:
    snap, info, _ = _read(fake, False)
    snap2, info2, calls2 = _read(fake, True, max_calls_per_cycle=5)  # exactly the five calls
    assert snap2 == snap and info2 == info and info2["calls"] == 5
    progs = [c.split()[0] for c in calls2]
    assert progs[:2] == ["scontrol", "sprio"]  # ping, then sprio on its own: it vouches for squeue
    assert sorted(progs[2:]) == ["sinfo", "squeue", "squeue"]


def test_concurrent_read_raises_the_first_failure_in_call_order(fake: FakeBin, captured: Path) -> None:
    fake.add("sinfo", stdout="not|a|node|line\n")  # a later call fails too
    fake.add("squeue", by_arg={"-o": ((captured / "squeue_jobs.txt").read_text(), 0),
                               "-O": ((captured / "squeue_tres.txt").read_text()[:-5], 0)})  # cut off
    with pytest.raises(SuspectRead, match="ends inside a line"):
        SlurmReader(SlurmRunner(bin_dir=str(fake.path)), concurrent=True).read()
    assert sorted(c.split()[0] for c in fake.calls()) == ["scontrol", "sinfo", "sprio", "squeue", "squeue"]
    fake.add("squeue", stderr=(captured / "squeue_down.stderr").read_text(), rc=1)
    with pytest.raises(ControllerDown):
        SlurmReader(SlurmRunner(bin_dir=str(fake.path)), concurrent=True).read()


def test_concurrent_read_takes_budget_and_tokens_before_any_call_starts(fake: FakeBin) -> None:
    with pytest.raises(CallBudgetExceeded, match="next: sinfo"):
        _read(fake, True, max_calls_per_cycle=4)
    assert [c.split()[0] for c in fake.calls()] == ["scontrol", "sprio"]  # no call of the group ran
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    runner = SlurmRunner(bin_dir=str(fake.path))
    runner.rpc_bucket = RpcBucket(rate=2.0, capacity=4.0, clock=lambda: now[0], sleep=sleep)
    SlurmReader(runner, concurrent=True).read()
    # ping 1 + sprio 1 + squeue 2 + squeue 2 + sinfo 2 = 8 RPCs from a bucket of 4 refilled at 2/s: the
    # group's 6 tokens were taken one call after another, waiting 2 s in all, before the three started
    assert sum(slept) == pytest.approx(2.0) and runner.rpc_bucket.tokens == pytest.approx(0.0)


def test_paused_gc_restores_the_collector() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it to the outer one
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError
    assert gc.isenabled()


def test_generated_queue_reads_whole_with_hostile_text() -> None:
    """The micro-benchmark's queue: every pending record read back, hostile accounts intact."""
    slurm = FakeSlurm.generate(400, seed=3)
    snap, info = read_once(slurm.outputs(), slurm.clock)
    pending = {j.job_id: j for j in slurm.jobs if j.state == "PENDING"}
    assert {j.id for j in snap.pending} == set(pending) and not info.skipped
    assert {j.account for j in snap.pending} == {j.account for j in pending.values()}
    assert any("|" in j.account or "\n" in j.account for j in snap.pending)
    assert isinstance(SlurmReader(CannedRunner(slurm.outputs())).runner, SlurmRunner)


def test_bench_decide_read_runs() -> None:
    res = bench_decide_read(200, ("sjf",), repeat=1, warm_cycles=2)
    assert res["pending"] == 200 and res["read"]["read"] > 0
    assert res["decide"]["sjf"]["planned"] > 0 and res["decide"]["sjf"]["warm_writes"][-1] == 0
