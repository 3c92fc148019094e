"""Apply job updates through ONE ``scontrol`` process reading ``update ...`` lines on stdin.

Levers (FACTS a-d): ``SiteFactor`` (additive, reversible with 0, range +-2147483645), ``ReqNodeList`` /
``ExcNodeList`` (empty value clears), ``OverSubscribe=yes|no`` (pending jobs only). ``Priority=`` is
never written: it freezes the priority and ``Priority=0`` is a hold.

Everything is validated against the snapshot before a byte is sent: a bad value, an unknown node or
a malformed id raises ``InvalidUpdate`` and nothing is written; jobs that are not pending or held
are refused per job, and so are admin-prioritised ones except for ``SiteFactor=0`` (undoing our own
change). Only values that differ from the snapshot are sent. One exception for undoing: a restore
may put back the SiteFactor of a *running* job (Slurm accepts it, FACTS a, and a requeued job would
otherwise come back with ours); its node lists cannot change while it runs.

Lines go out in batches of ``batch`` per ``scontrol`` process, at most ``rate`` lines per second
(``pacing``); a stop request between batches leaves the rest unsent (REFUSED "not sent").

``scontrol`` with no arguments reads commands from stdin (``scontrol -`` is invalid); lines after
``quit`` are ignored; rc is 1 when any line failed while the other lines still apply; failures come
on stderr as ``<message> for job <id>`` (FACTS d). A timeout, or an error saying the controller did
not answer, makes the outcome UNKNOWN, not failed: a hung slurmctld applies the request when it
resumes (FACTS g), so the caller must re-read before retrying.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from rltune_daemon.domain import PendingState, Snapshot
from rltune_daemon.domain.updates import ApplyResult, JobResult, JobUpdate, UpdateStatus
from rltune_daemon.formats.slurm import compress_hostlist, expand_hostlist
from rltune_daemon.slurm.errors import CommandTimeout, InvalidUpdate
from rltune_daemon.slurm.runner import CONTROLLER_DOWN_MARKERS, SlurmRunner

SITE_FACTOR_LIMIT = 2_147_483_645
_JOB_ID = re.compile(r"^[1-9]\d{0,9}$")
_FOR_JOB = re.compile(r"^(?P<msg>.*?)\s+for job (?P<id>\d+)")
_UNKNOWN_MARKERS = (*CONTROLLER_DOWN_MARKERS, "Unexpected message received")










# ---- building and validating -------------------------------------------------------------------


def _validate(u: JobUpdate, node_names: frozenset[str]) -> None:
    if not isinstance(u.job_id, str) or not _JOB_ID.match(u.job_id):
        raise InvalidUpdate(f"job id {u.job_id!r} is not a raw Slurm job id (digits only)")
    sf = u.site_factor
    if sf is not None and (isinstance(sf, bool) or not isinstance(sf, int)):
        raise InvalidUpdate(f"job {u.job_id}: SiteFactor must be an integer, got {sf!r}")
    if sf is not None and abs(sf) > SITE_FACTOR_LIMIT:
        raise InvalidUpdate(f"job {u.job_id}: SiteFactor {sf} outside +-{SITE_FACTOR_LIMIT}")
    if u.oversubscribe is not None and not isinstance(u.oversubscribe, bool):
        raise InvalidUpdate(f"job {u.job_id}: OverSubscribe must be True/False, got {u.oversubscribe!r}")
    for what, names in (("ReqNodeList", u.req_nodes), ("ExcNodeList", u.exc_nodes)):
        if names is None:
            continue
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise InvalidUpdate(f"job {u.job_id}: {what} must be a tuple of node names, got {names!r}")
        unknown = sorted(set(names) - node_names)
        if unknown:
            raise InvalidUpdate(f"job {u.job_id}: {what} names unknown node(s) {', '.join(unknown)}")


def _same_nodes(current: str, wanted: tuple[str, ...]) -> bool:
    return set(expand_hostlist(current)) == set(wanted)


def _oversub_word(value: bool) -> str:
    return "yes" if value else "no"


def _changes(u: JobUpdate, st: PendingState, force_site: bool) -> list[str]:
    """``Key=value`` tokens for the fields that differ from the snapshot; clears last."""
    out: list[str] = []
    if u.site_factor is not None and (force_site or u.site_factor != st.site_factor):
        out.append(f"SiteFactor={u.site_factor}")
    if u.oversubscribe is not None and st.oversubscribe.upper() != _oversub_word(u.oversubscribe).upper():
        out.append(f"OverSubscribe={_oversub_word(u.oversubscribe)}")
    sets: list[str] = []
    clears: list[str] = []
    for key, wanted, current in (
        ("ExcNodeList", u.exc_nodes, st.exc_nodes),
        ("ReqNodeList", u.req_nodes, st.req_nodes),
    ):
        if wanted is None or _same_nodes(current, wanted):
            continue
        (sets if wanted else clears).append(f"{key}={compress_hostlist(list(wanted))}")
    return out + sets + clears


@dataclass(frozen=True)
class Prepared:
    """Lines to send (job id, line) in sending order, and results decided without sending."""

    lines: tuple[tuple[str, str], ...]
    decided: tuple[JobResult, ...]


def prepare(
    snapshot: Snapshot,
    updates: Iterable[JobUpdate],
    *,
    site_factor_unknown: Collection[str] = frozenset(),
    restore: bool = False,
) -> Prepared:
    """Validate and build update lines (pure). Raises ``InvalidUpdate`` before anything is sent.

    Order: whole-array records first, so that a later line for a task split off the same array wins
    (``JobId=<array>`` also rewrites split tasks, FACTS a). Placement fields on a whole-array record
    are refused: one node list for every task of an array, running ones included, is never wanted.
    """
    ups = list(updates)
    node_names = frozenset(n.name for n in snapshot.nodes)
    seen: set[str] = set()
    for u in ups:
        if not isinstance(u, JobUpdate):
            raise InvalidUpdate(f"not a JobUpdate: {u!r}")
        _validate(u, node_names)
        if u.job_id in seen:
            raise InvalidUpdate(f"job {u.job_id}: more than one update in one batch")
        seen.add(u.job_id)
    states = {j.id: s for j, s in zip(snapshot.pending, snapshot.pending_state, strict=True)}
    running = {r.job.id for r in snapshot.running}
    decided: list[JobResult] = []
    first: list[tuple[str, str]] = []
    rest: list[tuple[str, str]] = []
    for u in ups:
        st = states.get(u.job_id)
        site_only = u.site_factor is not None and u.req_nodes is None and u.exc_nodes is None and (
            u.oversubscribe is None)
        if st is None and restore and u.job_id in running and site_only:
            rest.append((u.job_id, f"update JobId={u.job_id} SiteFactor={u.site_factor}"))
            continue
        if st is None:
            why = "running" if u.job_id in running else "not pending in the snapshot"
            decided.append(JobResult(u.job_id, UpdateStatus.REFUSED, why))
            continue
        if st.held:
            decided.append(JobResult(u.job_id, UpdateStatus.REFUSED, "held: never touched"))
            continue
        placement = (u.req_nodes, u.exc_nodes, u.oversubscribe)
        pure_clear = u.site_factor == 0 and all(v is None for v in placement)
        if st.admin_priority and not pure_clear:
            decided.append(JobResult(u.job_id, UpdateStatus.REFUSED, "priority set by an admin: left alone"))
            continue
        whole_array = st.array_job_id == u.job_id
        if whole_array and any(v is not None for v in placement):
            decided.append(JobResult(u.job_id, UpdateStatus.REFUSED,
                                     "whole job array: placement is not set for every task at once"))
            continue
        # sprio prints SITE 0 for an admin-prioritised job whatever is stored (FACTS a): a clear (which
        # the daemon's restore needs) is always written there
        tokens = _changes(u, st, u.job_id in site_factor_unknown or st.admin_priority)
        if not tokens:
            decided.append(JobResult(u.job_id, UpdateStatus.UNCHANGED))
            continue
        line = f"update JobId={u.job_id} " + " ".join(tokens)
        if re.search(r"(?<![A-Za-z])Priority=", line) or "\n" in line:
            raise InvalidUpdate(f"refusing to send {line!r}")  # pragma: no cover - cannot be built
        (first if whole_array else rest).append((u.job_id, line))
    return Prepared(tuple(first + rest), tuple(decided))


# ---- mapping scontrol's answer back ------------------------------------------------------------


def map_results(
    lines: Sequence[tuple[str, str]], rc: int | None, stderr: str, *, timed_out: bool = False
) -> list[JobResult]:
    """Per-job status from scontrol's rc and stderr (``<message> for job <id>`` per failed line)."""
    if timed_out:
        return [JobResult(j, UpdateStatus.UNKNOWN, "scontrol timed out", ln) for j, ln in lines]
    sent = {j for j, _ in lines}
    errors: dict[str, list[str]] = {}
    stray: list[str] = []
    for raw in stderr.splitlines():
        text = raw.strip()
        if not text:
            continue
        m = _FOR_JOB.match(text)
        if m and m.group("id") in sent:
            errors.setdefault(m.group("id"), []).append(m.group("msg").strip() or text)
        else:
            stray.append(text)
    controller_trouble = any(mk in s for s in stray for mk in _UNKNOWN_MARKERS)
    failed_rc = rc not in (0, None)
    out: list[JobResult] = []
    for job_id, line in lines:
        msgs = errors.get(job_id)
        if msgs:
            msg = "; ".join(msgs)
            trouble = any(mk in msg for mk in _UNKNOWN_MARKERS)
            status = UpdateStatus.UNKNOWN if trouble else UpdateStatus.FAILED
            out.append(JobResult(job_id, status, msg, line))
        elif controller_trouble or (failed_rc and stray):
            reason = "scontrol errors not tied to a job: " + "; ".join(stray)[:200]
            out.append(JobResult(job_id, UpdateStatus.UNKNOWN, reason, line))
        elif failed_rc and not errors:
            out.append(JobResult(job_id, UpdateStatus.UNKNOWN, f"scontrol rc={rc} without a message", line))
        else:
            out.append(JobResult(job_id, UpdateStatus.APPLIED, "", line))
    return out


# ---- the writer ------------------------------------------------------------------------------


class SlurmWriter:
    """Sends prepared updates. ``ping_first``: check ``scontrol ping`` and raise ``ControllerDown``
    before writing (an update to a dead controller waits MessageTimeout-1 s per line, FACTS g), unless
    slurmctld answered a read within ``fresh`` seconds (the cycle's own read, just before its plan).
    ``batch``/``rate``: lines per scontrol process and lines per second (0: no pause); with Slurm's
    RPC rate limit on the runner a batch is also never larger than its bucket."""

    def __init__(
        self,
        runner: SlurmRunner,
        *,
        ping_first: bool = True,
        fresh: float = 2.0,
        timeout_base: float = 10.0,
        timeout_per_line: float = 0.05,
        batch: int = 100,
        rate: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch < 1 or rate < 0:
            raise ValueError("batch must be >= 1 and rate >= 0")
        self.runner = runner
        self.ping_first = ping_first
        self.fresh = fresh
        self.timeout_base = timeout_base
        self.timeout_per_line = timeout_per_line
        self.batch = batch
        self.rate = rate
        self.clock = clock
        self.sleep = sleep

    def _batches(self, lines: Sequence[tuple[str, str]]) -> list[Sequence[tuple[str, str]]]:
        size = self.batch
        if self.runner.rpc_bucket is not None:
            size = max(1, min(size, int(self.runner.rpc_bucket.capacity)))
        return [lines[i:i + size] for i in range(0, len(lines), size)]

    def _pause(self, until: float, should_stop: Callable[[], bool] | None) -> bool:
        """Sleep until ``until`` in short steps (the watchdog ticks); False when a stop was asked."""
        while (left := until - self.clock()) > 0:
            if should_stop is not None and should_stop():
                return False
            self.sleep(min(left, 0.25))
            if self.runner.on_wait is not None:
                self.runner.on_wait()
        return should_stop is None or not should_stop()

    def apply(
        self,
        snapshot: Snapshot,
        updates: Iterable[JobUpdate],
        *,
        site_factor_unknown: Collection[str] = frozenset(),
        dry_run: bool = False,
        restore: bool = False,
        should_stop: Callable[[], bool] | None = None,
    ) -> ApplyResult:
        prep = prepare(snapshot, updates, site_factor_unknown=site_factor_unknown, restore=restore)
        if dry_run or not prep.lines:
            planned = tuple(JobResult(j, UpdateStatus.PLANNED, "dry run", ln) for j, ln in prep.lines)
            return ApplyResult(prep.decided + planned, dry_run=dry_run)
        if self.ping_first and not self.runner.answered_within(self.fresh):
            self.runner.require_up()
        t0 = self.clock()
        results: list[JobResult] = []
        rc: int | None = 0
        errs: list[str] = []
        sent = 0
        batches = self._batches(prep.lines)
        why_not = ""
        for k, lines in enumerate(batches):
            due = t0 + (sent / self.rate if self.rate else 0.0)
            if k and not why_not and not self._pause(due, should_stop):
                why_not = "not sent: the daemon is stopping"
            if why_not:  # never sent: the caller rolls its intents back
                results += [JobResult(j, UpdateStatus.REFUSED, why_not, ln) for j, ln in lines]
                continue
            sent += len(lines)
            payload = "".join(ln + "\n" for _, ln in lines) + "quit\n"
            timeout = self.timeout_base + self.timeout_per_line * len(lines)
            try:
                res = self.runner.run(["scontrol"], stdin=payload, timeout=timeout, check=False, budget=False)
            except CommandTimeout:
                results += map_results(lines, None, "", timed_out=True)
                rc, why_not = None, "not sent: scontrol timed out on an earlier batch"
                continue
            mapped = map_results(lines, res.rc, res.stderr)
            results += mapped
            rc = None if rc is None else max(rc, res.rc)
            errs.append(res.stderr)
            if any(r.status is UpdateStatus.UNKNOWN for r in mapped):
                why_not = "not sent: slurmctld did not answer an earlier batch"
        return ApplyResult(prep.decided + tuple(results), rc, self.clock() - t0, stderr="".join(errs))
