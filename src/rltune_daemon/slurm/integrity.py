"""Is a read complete? Checks that make the daemon write nothing rather than act on half a queue.

A Slurm client can exit 0 with a partial view: output cut at a line boundary, an empty list from a
client that could not reach the controller, a queue missing the jobs another call still lists. Each
check compares what one call listed with a second source and raises ``SuspectRead`` (the cycle then
writes nothing; the next one reads again):

* ``sprio`` is read BEFORE ``squeue``: every job it lists was pending then, so it is pending or
  running (or has just ended) when ``squeue`` runs a few milliseconds later. More than ``tolerance``
  of them missing from squeue means the squeue output lost jobs. The other way round, a pending job
  that became eligible (``squeue -O EligibleTime``) seconds before sprio ran is one sprio lists (it
  leaves out only held jobs and those not yet eligible: a dependency, a later ``--begin``).
* ``squeue -O`` (read after ``squeue -o``, or at the same time: ``SlurmReader(concurrent=True)``) must
  list the pending jobs ``squeue -o`` listed, but for the few that end (or, read at once, arrive) in
  between.
* A queue that shrinks by more than ``max_drop_share`` since the previous read is accepted only when
  Slurm confirms (``confirm``) that a sample of the vanished jobs ended; otherwise this read is suspect
  and the next one is compared with it, so a real drop is accepted one read later.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from rltune_daemon.domain import job_order
from rltune_daemon.domain.updates import Fate
from rltune_daemon.slurm.errors import SuspectRead
from rltune_daemon.slurm.parse import ENDED_STATES, LIVE_STATES


def fate_of(state: str) -> Fate:
    s = state.strip().upper()
    if s in ENDED_STATES:
        return Fate("ended", s)
    if s in LIVE_STATES:
        return Fate("alive", s)
    return Fate("other", s)


@dataclass(frozen=True)
class ReadLimits:
    """How much disagreement between two sources is normal churn (jobs ending between two calls a few
    milliseconds apart) rather than a lost read."""

    tolerance: int = 3
    tolerance_share: float = 0.01
    max_drop_share: float = 0.5
    drop_min_jobs: int = 20
    drop_sample: int = 50

    def allowed(self, n: int) -> int:
        return max(self.tolerance, int(self.tolerance_share * n))


def _some(ids: Collection[str], k: int = 5) -> str:
    shown = sorted(ids, key=job_order)[:k]
    more = f" and {len(ids) - k} more" if len(ids) > k else ""
    return ", ".join(shown) + more


def _lost(expected: Collection[str], seen: Collection[str], limits: ReadLimits) -> set[str]:
    """The jobs of ``expected`` that ``seen`` lacks, when more than churn explains; else none."""
    want = set(expected)
    missing = want - set(seen)
    return missing if len(missing) > limits.allowed(len(want)) else set()


def check_sprio(sprio_ids: Collection[str], listed: Collection[str], limits: ReadLimits) -> None:
    """sprio (read first) lists jobs squeue (read after it) does not."""
    if missing := _lost(sprio_ids, listed, limits):
        raise SuspectRead("sprio_mismatch", f"sprio lists {len(missing)} pending job(s) squeue did not "
                          f"({_some(missing)}) of {len(set(sprio_ids))}")


def check_sprio_covers(eligible: Collection[str], sprio_ids: Collection[str], limits: ReadLimits) -> None:
    """squeue lists pending jobs, eligible well before sprio ran, that sprio (which lists every eligible
    pending job) did not: the sprio output lost jobs."""
    if missing := _lost(eligible, sprio_ids, limits):
        raise SuspectRead("sprio_mismatch", f"squeue lists {len(missing)} eligible pending job(s) that "
                          f"sprio did not ({_some(missing)}) of {len(set(eligible))}")


def check_tres(pending: Collection[str], tres_ids: Collection[str], limits: ReadLimits) -> None:
    """``squeue -O`` (read second) lost pending jobs ``squeue -o`` (read first) listed."""
    if missing := _lost(pending, tres_ids, limits):
        raise SuspectRead("tres_mismatch", f"squeue -O lists {len(missing)} of {len(set(pending))} "
                          f"pending job(s) fewer than squeue -o ({_some(missing)})")


def vanished_sample(previous: Collection[str], listed: Collection[str], limits: ReadLimits,
                    seed: int = 0) -> list[str]:
    """The vanished jobs to ask Slurm about when the queue shrank by more than ``max_drop_share`` of
    the previous read (at least ``drop_min_jobs`` jobs before); empty when the drop is ordinary."""
    before = set(previous)
    gone = before - set(listed)
    if len(before) < limits.drop_min_jobs or len(gone) <= limits.max_drop_share * len(before):
        return []
    ordered = sorted(gone, key=job_order)
    return random.Random(seed).sample(ordered, min(limits.drop_sample, len(ordered)))


def check_drop(sample: Collection[str], fates: Mapping[str, Fate], before: int, after: int) -> None:
    """A big drop stands only when every sampled vanished job is confirmed over."""
    alive = [j for j in sample if fates.get(j, Fate("unknown")).kind == "alive"]
    unconfirmed = [j for j in sample if not fates.get(j, Fate("unknown")).over]
    if alive:
        raise SuspectRead("drop", f"the queue shrank from {before} to {after} job(s), yet Slurm still lists "
                          f"{len(alive)} of {len(sample)} sampled vanished job(s) as pending or running "
                          f"({_some(alive)})")
    if unconfirmed:
        raise SuspectRead("drop", f"the queue shrank from {before} to {after} job(s) and Slurm confirms "
                          f"only {len(sample) - len(unconfirmed)} of {len(sample)} sampled vanished job(s) "
                          "ended; read again next cycle")


def check_alive(fates: Mapping[str, Fate]) -> None:
    """Jobs the daemon changed that the read did not list, which Slurm still lists as pending/running."""
    alive = {j: f.state for j, f in fates.items() if f.kind == "alive"}
    if alive:
        raise SuspectRead("vanished_alive", f"{len(alive)} job(s) the daemon changed are missing from the "
                          f"read but Slurm lists them as pending or running ({_some(alive)})")
