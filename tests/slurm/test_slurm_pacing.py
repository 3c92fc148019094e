"""Pacing: the RPC cost of each client call, the token bucket that keeps the daemon under Slurm's per-user
RPC rate limit (rl_enable, Slurm 23.02+), and reading that limit from ``scontrol show config``."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rltune_daemon.slurm.pacing import MARGIN, RateLimit, RpcBucket, rate_limit_from_config, rpc_cost
from rltune_daemon.slurm.reader import confirm_argv, queue_argv, sinfo_argv, sprio_argv, squeue_jobs_argv


class Clock:
    """A fake monotonic clock that ``sleep`` advances."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def test_rpc_cost_of_each_call_the_daemon_makes() -> None:
    """Counted with sdiag's per-user RPC statistics on 22.05 (docs/reliability.md)."""
    assert rpc_cost(["scontrol", "ping"]) == 1
    assert rpc_cost(sprio_argv()) == 1
    assert rpc_cost(squeue_jobs_argv()) == 2 and rpc_cost(queue_argv()) == 2
    assert rpc_cost(sinfo_argv()) == 2
    assert rpc_cost(confirm_argv(["7"])) == 3 and rpc_cost(confirm_argv(["7", "8"])) == 2
    assert rpc_cost(["scontrol", "show", "config"]) == 2
    assert rpc_cost(["scontrol"], "update JobId=1 SiteFactor=1\nupdate JobId=2 SiteFactor=2\nquit\n") == 2
    assert rpc_cost(["sacct", "-X"]) == 0  # slurmdbd, not slurmctld


def test_bucket_waits_only_when_empty_and_ticks_while_waiting() -> None:
    clock = Clock()
    ticks: list[float] = []
    b = RpcBucket(rate=2.0, capacity=10.0, clock=clock, sleep=clock.sleep)
    b.take(10)
    assert clock.t == 100.0  # a full bucket: no wait
    b.take(4, tick=lambda: ticks.append(clock.t))
    assert clock.t == pytest.approx(102.0) and len(ticks) >= 8  # 4 tokens at 2/s, ticking every 0.25 s
    with pytest.raises(ValueError):
        RpcBucket(rate=0, capacity=5)


def _slurm_allows(times: list[tuple[float, int]], bucket: int, refill: int, period: int) -> bool:
    """Slurm's rate_limit.c: each user starts with ``bucket`` tokens, gains ``refill`` per whole
    ``period`` seconds elapsed (time() granularity), at most ``bucket``; an RPC with no token is refused."""
    tokens, last = float(bucket), None
    for t, cost in times:
        sec = math.floor(t)
        if last is not None and sec > last:
            tokens = min(bucket, tokens + (sec - last) // period * refill)
            last = last + (sec - last) // period * period
        elif last is None:
            last = sec
        for _ in range(cost):
            if tokens < 1:
                return False
            tokens -= 1
    return True


@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=80),
       st.sampled_from([(30, 2, 1), (10, 1, 1), (50, 5, 2), (100, 10, 1)]))
def test_calls_paced_by_our_bucket_never_exhaust_slurms(costs: list[int],
                                                        limits: tuple[int, int, int]) -> None:
    bucket, refill, period = limits
    clock = Clock()
    ours = RateLimit(True, bucket, refill, period).bucket_for_us()
    ours.clock, ours.sleep = clock, clock.sleep
    ours._at = clock()  # the fake clock starts now
    calls = []
    for asked in costs:
        cost = min(asked, int(ours.capacity))  # the writer never sends a batch larger than the bucket
        ours.take(cost)
        calls.append((clock.t, cost))
    assert _slurm_allows(calls, bucket, refill, period)


def test_rate_limit_read_from_show_config() -> None:
    text = ("SlurmUser               = slurm(64030)\n"
            "SlurmctldParameters     = enable_configless,rl_enable,rl_bucket_size=50,rl_refill_rate=5\n")
    op = rate_limit_from_config(text, uid=1001)
    assert op.applies and (op.bucket, op.refill_rate, op.refill_period) == (50, 5, 1)
    b = op.bucket_for_us()
    assert b.capacity == pytest.approx(MARGIN * 50) and b.rate == pytest.approx(MARGIN * 5)
    assert not rate_limit_from_config(text, uid=0).applies  # root is never limited
    assert not rate_limit_from_config(text, uid=64030).applies  # nor SlurmUser
    off = rate_limit_from_config("SlurmctldParameters     = (null)\nSlurmUser = root(0)\n", uid=1001)
    assert not off.enabled and "off" in off.describe()
    assert rate_limit_from_config("SlurmctldParameters = rl_enable\n", uid=5).bucket == 30  # defaults
