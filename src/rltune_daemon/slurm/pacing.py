"""How fast the daemon may talk to slurmctld.

Two limits, both enforced on our side so that Slurm never has to:

* **Writes are spread out.** Every ``scontrol update`` takes slurmctld's job write lock and can start a
  scheduling pass; 10,000 updates in one burst made a user's ``sbatch`` wait 0.5-0.9 s on the local
  cluster, while batches of a few hundred did not show. The writer sends ``batch`` lines per
  ``scontrol`` process at most ``rate`` lines per second (``[slurm] write_batch``/``write_rate``).
* **Slurm's per-user RPC rate limit.** With ``SlurmctldParameters=rl_enable`` (Slurm 23.02 and newer)
  every user except root and SlurmUser (an Operator included) has a bucket of ``rl_bucket_size``
  tokens (default 30) refilled by ``rl_refill_rate`` (2) every ``rl_refill_period`` (1) seconds; each RPC
  takes one, and a user with none is told to back off. ``RpcBucket`` mirrors that bucket with a safety
  margin and every call of the runner takes its cost from it first (``rpc_cost``: RPCs per client
  call, counted with sdiag on 22.05), so the daemon never runs dry. ``rate_limit_from_config`` reads
  the settings from ``scontrol show config``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# RPCs per client call (sdiag "by user" before/after each call, Slurm 22.05): squeue = job info +
# partition info, with a single -j the single-job RPC too; sinfo = node + partition info.
_COST = {"squeue": 2, "sprio": 1, "sinfo": 2, "sacct": 0, "sacctmgr": 0}
RL_DEFAULTS = {"rl_bucket_size": 30, "rl_refill_rate": 2, "rl_refill_period": 1}
# share of Slurm's bucket and refill rate the daemon allows itself: the rest absorbs rounding of
# Slurm's whole-second clock and an admin's own commands under the same user
MARGIN = 0.7


def rpc_cost(argv: Sequence[str], stdin: str | None = None) -> int:
    """RPCs one client call makes (see ``_COST``); ``scontrol`` reading commands: one per line."""
    prog = os.path.basename(argv[0]) if argv else ""
    if prog == "scontrol":
        if stdin is not None:
            return max(1, sum(1 for ln in stdin.splitlines() if ln.strip() and ln.strip() != "quit"))
        return 1 if "ping" in argv else 2
    if prog == "squeue" and "-j" in argv:
        ids = argv[argv.index("-j") + 1] if argv.index("-j") + 1 < len(argv) else ""
        return 3 if "," not in ids else 2
    return _COST.get(prog, 2)


@dataclass
class RpcBucket:
    """A token bucket of ``capacity`` tokens refilled at ``rate`` per second, starting full."""

    rate: float
    capacity: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.capacity < 1:
            raise ValueError("an RPC bucket needs a positive rate and room for one call")
        self.tokens = self.capacity
        self._at = self.clock()
        self.waited = 0.0  # seconds spent waiting, for the cycle log

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self, cost: float, tick: Callable[[], None] | None = None) -> None:
        """Wait until ``cost`` tokens are there (at most ``capacity``), then take them; ``tick`` is
        called at least every 0.25 s while waiting (the systemd watchdog)."""
        need = min(float(cost), self.capacity)
        self._refill()
        while self.tokens < need:
            # at least 1 ms: a deficit of a rounding error must not become a sleep the clock cannot see
            pause = min(max((need - self.tokens) / self.rate, 0.001), 0.25)
            self.sleep(pause)
            self.waited += pause
            if tick is not None:
                tick()
            self._refill()
        self.tokens -= float(cost)


@dataclass(frozen=True)
class RateLimit:
    """Slurm's RPC rate limit as configured, and whether it applies to the daemon's user."""

    enabled: bool
    bucket: int = RL_DEFAULTS["rl_bucket_size"]
    refill_rate: int = RL_DEFAULTS["rl_refill_rate"]
    refill_period: int = RL_DEFAULTS["rl_refill_period"]
    exempt: bool = False  # root or SlurmUser: Slurm does not limit them

    @property
    def applies(self) -> bool:
        return self.enabled and not self.exempt

    def bucket_for_us(self) -> RpcBucket:
        return RpcBucket(rate=MARGIN * self.refill_rate / max(self.refill_period, 1),
                         capacity=max(1.0, MARGIN * self.bucket))

    def describe(self) -> str:
        if not self.enabled:
            return "off (SlurmctldParameters has no rl_enable)"
        who = "does not apply: root/SlurmUser are exempt" if self.exempt else (
            f"the daemon keeps under {MARGIN:.0%} of it")
        return (f"rl_enable: {self.bucket} tokens, {self.refill_rate} per {self.refill_period} s per user; "
                f"{who}")


_SLURM_USER = re.compile(r"^\s*SlurmUser\s*=\s*\S*?\((\d+)\)", re.MULTILINE)
_CTLD_PARAMS = re.compile(r"^\s*SlurmctldParameters\s*=\s*(.*)$", re.MULTILINE)


def rate_limit_from_config(show_config: str, uid: int | None = None) -> RateLimit:
    """``RateLimit`` from ``scontrol show config`` output (``SlurmctldParameters = rl_enable,...``,
    ``SlurmUser = slurm(64030)``) for the user ``uid`` (default: this process's)."""
    uid = os.geteuid() if uid is None else uid
    m = _CTLD_PARAMS.search(show_config)
    params = [p.strip() for p in (m.group(1) if m else "").split(",") if p.strip()]
    enabled = any(p.lower() == "rl_enable" for p in params)
    values = dict(RL_DEFAULTS)
    for p in params:
        key, sep, value = p.partition("=")
        if sep and key.lower() in values and value.strip().isdigit():
            values[key.lower()] = int(value)
    su = _SLURM_USER.search(show_config)
    exempt = uid == 0 or (su is not None and int(su.group(1)) == uid)
    return RateLimit(enabled, values["rl_bucket_size"], values["rl_refill_rate"],
                     values["rl_refill_period"], exempt)
