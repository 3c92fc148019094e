"""Applier rules on synthetic snapshots: what is written, what never is, hint lifetime, settlement,
outside changes and restore."""

from __future__ import annotations

import dataclasses

from service_helpers import ALL_NODES, entry, pending, plan_of, snapshot, with_site

from rltune_daemon.core.applier import EXC, SITE, Applier, Decision, main_pass_jobs
from rltune_daemon.core.record import DaemonState
from rltune_daemon.domain.updates import ApplyResult, Fate, JobResult, UpdateStatus
from rltune_daemon.slurm.writer import prepare

S = UpdateStatus


def _apply(state: DaemonState, snap: object, dec: Decision, status: UpdateStatus = S.APPLIED) -> None:
    from rltune_daemon.domain import Snapshot

    assert isinstance(snap, Snapshot)
    Applier.begin(state, snap, dec, 1.0)
    prep = prepare(snap, dec.updates())
    res = ApplyResult(prep.decided + tuple(JobResult(j, status, "", ln) for j, ln in prep.lines), 0)
    Applier.settle(state, dec, res)


def test_only_changed_site_factors_are_written() -> None:
    snap = snapshot([pending("1", site=0), pending("2", site=5)])
    dec = Applier().decide(DaemonState(), snap, plan_of(entry("1", 1, 7), entry("2", 2, 5)))
    assert [(c.job_id, c.field, c.value) for c in dec.changes] == [("1", SITE, 7)]
    assert dec.updates()[0].site_factor == 7 and dec.updates()[0].exc_nodes is None


def test_leave_order_writes_nothing_new_and_undoes_ours() -> None:
    snap = snapshot([pending("1"), pending("2")])
    state = DaemonState()
    applier = Applier()
    dec = applier.decide(state, snap, plan_of(entry("1", 1, 3), entry("2", 2, -1)))
    _apply(state, snap, dec)
    assert state.jobs["1"].fields[SITE].original == 0
    later = with_site(snap, {"1": 3, "2": -1})
    applier.reconcile(state, later)
    dec = applier.decide(state, later, plan_of(entry("1", 1, 3), entry("2", 2, -1)), leave_order=True)
    assert sorted((c.job_id, c.value, c.kind) for c in dec.changes) == [("1", 0, "release"),
                                                                         ("2", 0, "release")]
    _apply(state, later, dec)
    assert state.jobs == {}


def test_jobs_outside_the_plan_are_never_written_but_ours_are_released() -> None:
    """Exempt/held/running jobs are not in the plan: nothing is written for them, except putting our
    own earlier change back (the job became exempt after we touched it)."""
    snap = snapshot([pending("1"), pending("2"), pending("3", held=True, prio=0)], running=["9"])
    state = DaemonState()
    applier = Applier()
    _apply(state, snap, applier.decide(state, snap, plan_of(entry("1", 1, 4), entry("2", 2, 2))))
    later = with_site(snap, {"1": 4, "2": 2})
    applier.reconcile(state, later)
    dec = applier.decide(state, later, plan_of(entry("2", 1, 2), skipped=[("1", "exempt user alice")]))
    assert [(c.job_id, c.value, c.kind) for c in dec.changes] == [("1", 0, "release")]
    assert not any(c.job_id in ("3", "9") for c in dec.changes)


def test_hint_is_an_exclusion_of_every_other_node_and_keeps_the_users_own() -> None:
    snap = snapshot([pending("1", reason="Resources", exc_nodes="m40-1")])
    dec = Applier().decide(DaemonState(), snap, plan_of(entry("1", 1, 0, hint=["p100-2"])))
    (ch,) = dec.changes
    assert ch.field == EXC and ch.kind == "hint" and ch.nodes == ("p100-2",)
    assert set(ch.value) == set(ALL_NODES) - {"p100-2"}  # type: ignore[arg-type]
    assert dec.updates()[0].req_nodes is None  # never ReqNodeList: it would shrink a job that just started


def test_no_hint_where_it_could_hold_a_job_back() -> None:
    applier = Applier()
    cases = {
        "pinned": pending("1", req_nodes="k80-1"),
        "array": pending("2", array_job_id="2"),
        "dependency": pending("3", reason="Dependency"),
        "excluded": pending("4", exc_nodes="p100-2"),
    }
    for name, job in cases.items():
        snap = snapshot([job])
        dec = applier.decide(DaemonState(), snap, plan_of(entry(job[0].id, 1, 0, hint=["p100-2"])))
        assert not [c for c in dec.changes if c.field == EXC], name
    # behind a job that cannot start now: only backfill could start it, a hint could hold it back
    snap = snapshot([pending("5"), pending("6")])
    the_plan = plan_of(entry("5", 1, 0), entry("6", 2, 0, hint=["p100-2"]))
    assert main_pass_jobs(the_plan) == frozenset()
    assert not applier.decide(DaemonState(), snap, the_plan).changes
    # a node backfill has planned for another job
    snap = snapshot([pending("7")], state={"p100-2": "planned"})
    assert not applier.decide(DaemonState(), snap, plan_of(entry("7", 1, 0, hint=["p100-2"]))).changes
    # placement switched off
    snap = snapshot([pending("8")])
    assert not Applier(placement=False).decide(DaemonState(), snap, plan_of(entry("8", 1, 0, hint=["p100-2"]))
                                               ).changes


def test_stale_hint_is_cleared_after_hint_cycles_and_never_repeated() -> None:
    applier = Applier(hint_cycles=2)
    state = DaemonState()
    snap = snapshot([pending("1")])
    the_plan = plan_of(entry("1", 1, 0, hint=["p100-2"]))
    dec = applier.decide(state, snap, the_plan)
    _apply(state, snap, dec)
    hinted = with_site(snap, exc={"1": ",".join(dec.changes[0].value)})  # type: ignore[arg-type]
    kinds = []
    for _ in range(4):  # the job keeps pending: cycles 2..5
        applier.reconcile(state, hinted if "1" in state.jobs and state.jobs["1"].fields else snap)
        current = hinted if "1" in state.jobs and EXC in state.jobs["1"].fields else snap
        dec = applier.decide(state, current, the_plan)
        kinds.append([c.kind for c in dec.changes])
        _apply(state, current, dec)
    assert kinds == [[], ["expire"], [], []]
    assert state.jobs["1"].hint_done and EXC not in state.jobs["1"].fields


def test_a_hint_taken_off_early_still_counts_towards_hint_cycles() -> None:
    """On a live cluster Slurm looks at a hinted job between two cycles; if the hinted node became
    unavailable it says the job waits for ``ReqNodeNotAvail``, and the daemon takes the hint off. When
    Slurm says ``Resources`` again the job may be hinted again, but the cycles it was hinted add up:
    after ``hint_cycles`` of them in all it is never hinted again (not hinted every other cycle)."""
    applier = Applier(hint_cycles=2)
    state = DaemonState()
    snap = snapshot([pending("1", reason="Resources")])
    the_plan = plan_of(entry("1", 1, 0, hint=["p100-2"]))
    kinds = []
    current = snap
    for _ in range(8):
        applier.reconcile(state, current)
        dec = applier.decide(state, current, the_plan)
        kinds.append([c.kind for c in dec.changes])
        _apply(state, current, dec)
        rec = state.jobs.get("1")
        if rec is not None and rec.hint_nodes:  # Slurm: the hinted node is reserved now
            hinted = with_site(snap, exc={"1": ",".join(rec.fields[EXC].value)})  # type: ignore[arg-type]
            current = dataclasses.replace(hinted, pending_state=tuple(
                dataclasses.replace(s, reason="ReqNodeNotAvail, May be reserved for other job")
                for s in hinted.pending_state))
        else:
            current = snap
    assert kinds[:4] == [["hint"], ["clear"], ["hint"], ["expire"]] and not any(kinds[4:]), kinds
    assert state.jobs["1"].hint_done and EXC not in state.jobs["1"].fields


def test_hint_dropped_from_the_plan_is_removed_at_once() -> None:
    applier = Applier()
    state = DaemonState()
    snap = snapshot([pending("1")])
    dec = applier.decide(state, snap, plan_of(entry("1", 1, 0, hint=["p100-2"])))
    _apply(state, snap, dec)
    hinted = with_site(snap, exc={"1": ",".join(dec.changes[0].value)})  # type: ignore[arg-type]
    applier.reconcile(state, hinted)
    dec = applier.decide(state, hinted, plan_of(entry("1", 1, 0)))
    assert [(c.kind, c.value) for c in dec.changes] == [("clear", ())]


def test_outside_change_makes_the_job_hands_off() -> None:
    applier = Applier()
    state = DaemonState()
    snap = snapshot([pending("1"), pending("2", site=250)])
    _apply(state, snap, applier.decide(state, snap, plan_of(entry("1", 1, 40))))
    notes = applier.reconcile(state, with_site(snap, {"1": 999}))
    assert "1" not in state.jobs and "SiteFactor changed outside" in state.hands_off["1"]
    assert "SiteFactor set outside" in state.hands_off["2"]  # someone else's SiteFactor: left alone
    assert notes and "leaving it alone" in notes[0]
    marked = applier.planning_snapshot(state, snap)
    assert all(s.admin_priority for s in marked.pending_state)


def test_unknown_write_is_settled_by_the_next_read() -> None:
    applier = Applier()
    for applied in (True, False):
        state = DaemonState()
        snap = snapshot([pending("1")])
        dec = applier.decide(state, snap, plan_of(entry("1", 1, 40)))
        _apply(state, snap, dec, S.UNKNOWN)
        fc = state.jobs["1"].fields[SITE]
        assert (fc.original, fc.value, fc.confirmed) == (0, 40, False)
        applier.reconcile(state, with_site(snap, {"1": 40 if applied else 0}))
        assert ("1" in state.jobs) is applied and not state.hands_off


def test_refused_write_is_rolled_back() -> None:
    state = DaemonState()
    snap = snapshot([pending("1")])
    dec = Applier().decide(state, snap, plan_of(entry("1", 1, 40)))
    _apply(state, snap, dec, S.REFUSED)
    assert state.jobs == {}


def test_restore_puts_originals_back_and_forgets_only_jobs_slurm_says_are_over() -> None:
    applier = Applier()
    state = DaemonState()
    snap = snapshot([pending("1", site=0), pending("2"), pending("3")])
    dec = applier.decide(state, snap, plan_of(entry("1", 1, 30, hint=["p100-2"]), entry("2", 2, -3),
                                              entry("3", 3, -5)))
    _apply(state, snap, dec)
    now = with_site(snap, {"1": 30}, exc={"1": ",".join(dec.changes[1].value)}, drop={"2", "3"})  # type: ignore[arg-type]
    out = applier.restore(state, now, {"2": Fate("ended", "COMPLETED"), "3": Fate("unknown")})
    assert out.dropped == ["2"]
    assert "3" in out.unresolved and "3" in state.jobs  # not listed, not confirmed: its record stays
    assert sorted((c.job_id, c.field, c.value) for c in out.changes) == [("1", EXC, ()), ("1", SITE, 0)]
    (u,) = out.updates()
    assert (u.site_factor, u.exc_nodes) == (0, ())
    _apply(state, now, out)
    assert set(state.jobs) == {"3"}
    again = applier.restore(state, snapshot([pending("1"), pending("3", site=-5)]))
    assert [(c.job_id, c.value) for c in again.changes] == [("3", 0)]  # back in the queue: restored


def test_restore_puts_back_a_running_jobs_site_factor_and_keeps_its_node_list() -> None:
    applier = Applier()
    state = DaemonState()
    snap = snapshot([pending("1")])
    dec = applier.decide(state, snap, plan_of(entry("1", 1, 30, hint=["p100-2"])))
    _apply(state, snap, dec)
    out = applier.restore(state, snapshot([], running=["1"]))
    assert [(c.job_id, c.field, c.value) for c in out.changes] == [("1", SITE, 0)]
    assert "ExcNodeList" in out.kept["1"] and not out.dropped


def test_requeued_job_loses_its_hint() -> None:
    applier = Applier()
    state = DaemonState()
    snap = snapshot([pending("1")])
    dec = applier.decide(state, snap, plan_of(entry("1", 1, 0, hint=["p100-2"])))
    _apply(state, snap, dec)
    applier.reconcile(state, snapshot([], running=["1"]))
    assert state.jobs["1"].started
    back = with_site(snap, exc={"1": ",".join(dec.changes[0].value)})  # type: ignore[arg-type]
    notes = applier.reconcile(state, back)
    assert "requeued" in notes[0]
    dec = applier.decide(state, back, plan_of(entry("1", 1, 0, hint=["p100-2"])))
    assert [(c.kind, c.value) for c in dec.changes] == [("clear", ())]


def test_a_job_missing_from_reads_is_kept_until_slurm_confirms_it_ended() -> None:
    applier = Applier()
    state = DaemonState()
    snap = snapshot([pending("1")])
    _apply(state, snap, applier.decide(state, snap, plan_of(entry("1", 1, 40))))
    gone = snapshot([])
    for fate in (None, Fate("unknown"), Fate("other", "SUSPENDED")):
        applier.reconcile(state, gone, fates=None if fate is None else {"1": fate})
        assert "1" in state.jobs
    applier.reconcile(state, gone, fates={"1": Fate("gone")})
    assert state.jobs == {}


