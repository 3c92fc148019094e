"""The daemon as sites run it where root is not an option: a non-root Slurm Operator
(``sacctmgr ... AdminLevel=Operator``, which needs slurmdbd) under Slurm's per-user RPC rate limit
(``SlurmctldParameters=rl_enable``, enforced from 23.02). Used by ``bench soak --operator`` and the
rate-limit test, so both set the cluster up and count refusals the same way."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rltune_daemon.errors import UserError

OPERATOR_USER = "rltuser"  # the local cluster's test user (up.sh creates it), made an Operator


@dataclass(frozen=True)
class RateLimitSettings:
    """``rl_enable`` with Slurm's knobs (its defaults: 30 tokens, 2 per 1 s)."""

    bucket: int = 30
    refill: int = 2
    period: int = 1

    def slurmctld_parameters(self) -> str:
        # rl_log_freq=0: slurmctld logs every refusal (its default, stated so that the count is complete)
        return (f"rl_enable,rl_bucket_size={self.bucket},rl_refill_rate={self.refill},"
                f"rl_refill_period={self.period},rl_log_freq=0")


def _runs_python(user: str) -> bool:
    res = subprocess.run(["runuser", "-u", user, "--", sys.executable, "-c", "import rltune_daemon"],
                         capture_output=True, timeout=120, check=False, cwd="/tmp")
    return res.returncode == 0


@contextmanager
def python_for(user: str) -> Iterator[None]:
    """Let ``user`` run this project's interpreter for the duration. Where it lives under a home
    directory closed to others (pyenv in /root), that directory is opened for traversal (o+x, no
    listing) and closed again afterwards. Raises ``UserError`` when that is not enough."""
    if _runs_python(user):
        yield
        return
    opened = []
    for parent in Path(sys.executable).resolve().parents:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            opened.append((parent, mode))
            parent.chmod(mode | 0o001)
    try:
        if not _runs_python(user):
            raise UserError(f"{user} cannot run {sys.executable} (its files are not readable by others)")
        yield
    finally:
        for parent, mode in opened:
            parent.chmod(mode & 0o7777)


def refusals(slurmctld_log: Path, uid: int) -> dict[str, int]:
    """RPCs slurmctld refused from ``uid``, by message type ("RPC rate limit exceeded by uid N with
    REQUEST_JOB_INFO from ..., telling to back off", logged at info). Slurm's clients sleep and resend
    each refused RPC themselves, so a refusal costs time, not an update; counting them says whether the
    daemon's pacing kept inside the bucket, and which call overdrew it."""
    try:
        text = slurmctld_log.read_text(errors="replace")
    except OSError:
        return {}
    return dict(Counter(re.findall(rf"RPC rate limit exceeded by uid {uid} with (\S+)", text)))
