"""Reader and writer against a real local Slurm 22.05 (started once per session, see slurm_fixtures).

Order matters only for the last tests, which stop and freeze slurmctld; each test cancels the pending
jobs it made. The blockers (every GPU busy) stay for the whole module.
"""

from __future__ import annotations

import time

import pytest

from rltune_daemon.domain.updates import JobUpdate, UpdateStatus
from rltune_daemon.slurm.errors import ControllerDown
from slurm_fixtures import GPU_LAYOUT, MESSAGE_TIMEOUT, TEST_USER, SlurmTestCluster

pytestmark = pytest.mark.slurm


def test_snapshot_matches_what_was_submitted(c: SlurmTestCluster) -> None:
    ids = {
        "typed": c.submit("--gres=gpu:p100:2", "-t", "30"),
        "per_job": c.submit("--gpus=k80:3", "-N", "2", "-t", "45"),
        "user": c.submit("--gres=gpu:m40:1", "-t", "1:00:00", "--mem=2000", user=TEST_USER),
        "array": c.submit("-a", "0-2", "--gres=gpu:p100:1", "-t", "5"),
        "hipri": c.submit("-p", "hipri", "--gres=gpu:1"),
        "held": c.submit("-H", "--gres=gpu:k80:1", "-t", "5"),
        "admin": c.submit("--gres=gpu:p100:1", "-t", "10"),
        "nice": c.submit("--nice=100", "--gres=gpu:p100:1", "-t", "10", "--exclude=k80-[1-2]"),
    }
    c.scontrol("update", f"JobId={ids['admin']}", "Priority=5000")
    c.wait_in_sprio(ids["typed"], ids["nice"], ids["admin"])
    reader = c.reader()
    snap = reader.read()
    assert reader.last is not None and reader.last.calls == 5
    jobs = {j.id: j for j in snap.pending}
    states = {j.id: s for j, s in zip(snap.pending, snap.pending_state, strict=True)}
    assert set(ids.values()) <= set(jobs)

    def req(k: str) -> tuple[object, ...]:
        j = jobs[ids[k]]
        return (j.gpus, j.gpu_types, j.time_limit, j.user, j.partition)

    assert req("typed") == (2, ("p100",), 1800, "root", "gpu")
    assert req("per_job") == (3, ("k80",), 2700, "root", "gpu")
    assert req("user") == (1, ("m40",), 3600, TEST_USER, "gpu")
    assert jobs[ids["user"]].mem_mb == 2000
    assert req("array") == (1, ("p100",), 300, "root", "gpu")
    assert req("hipri") == (1, (), 86400, "root", "hipri")  # no --time: the partition's MaxTime
    assert reader.last.array_tasks == {ids["array"]: 3}
    assert states[ids["array"]].array_job_id == ids["array"]
    assert states[ids["held"]].held and ids["held"] in reader.last.site_factor_unknown
    assert states[ids["admin"]].admin_priority and states[ids["admin"]].priority == 5000
    assert not any(states[ids[k]].admin_priority for k in ("typed", "nice", "user"))
    assert states[ids["nice"]].nice == 100 and states[ids["nice"]].exc_nodes == "k80-[1-2]"
    # running: each blocker on its node with all the node's GPUs; node usage matches
    running = {r.job.id: r for r in snap.running}
    for node, job_id in c.blockers.items():
        alloc = running[job_id].allocation
        assert [(a.node, a.gpus) for a in alloc] == [(node, GPU_LAYOUT[node][1])]
        assert running[job_id].est_end - running[job_id].start == 3600
    for n in snap.nodes:
        gtype, gpus = GPU_LAYOUT[n.name]
        assert (n.gpu_type, n.gpus, n.gpus_alloc, n.usable) == (gtype, gpus, gpus, True)
        assert n.partitions == ("gpu", "hipri")
    assert {(p.name, p.priority_tier) for p in snap.partitions} == {("gpu", 1), ("hipri", 2)}


def test_site_factor_set_read_back_and_cleared(c: SlurmTestCluster) -> None:
    a = c.submit("--gres=gpu:p100:1", "-t", "5")
    b = c.submit("--gres=gpu:p100:1", "-t", "5")
    c.wait_in_sprio(a, b)
    base = c.sprio()[a][0]
    writer, reader = c.writer(), c.reader()
    res = writer.apply(reader.read(), [JobUpdate(a, site_factor=500), JobUpdate(b, site_factor=-300)])
    assert set(res.applied) == {a, b} and res.rc == 0
    prio = c.sprio()
    assert prio[a] == (base + 500, 500) and prio[b] == (base - 300, -300)
    snap = reader.read()
    again = writer.apply(snap, [JobUpdate(a, site_factor=500)])  # only changed values are written
    assert again.by_job()[a].status is UpdateStatus.UNCHANGED and again.rc is None
    writer.apply(snap, [JobUpdate(a, site_factor=0), JobUpdate(b, site_factor=0)])
    assert c.sprio()[a] == (base, 0) and c.sprio()[b] == (base, 0)


def test_req_and_exc_node_lists_set_and_cleared(c: SlurmTestCluster) -> None:
    j = c.submit("--gres=gpu:p100:1", "-t", "5")
    c.wait_in_sprio(j)
    writer, reader = c.writer(), c.reader()
    res = writer.apply(reader.read(), [JobUpdate(j, req_nodes=("p100-2",), exc_nodes=("k80-1", "k80-2"))])
    assert res.applied == (j,)
    assert c.squeue("%n|%x", j) == ["p100-2|k80-[1-2]"]
    snap = reader.read()
    st = dict(zip([x.id for x in snap.pending], snap.pending_state, strict=True))[j]
    assert (st.req_nodes, st.exc_nodes) == ("p100-2", "k80-[1-2]")
    res = writer.apply(snap, [JobUpdate(j, req_nodes=(), exc_nodes=())])
    assert res.applied == (j,) and c.squeue("%n|%x", j) == ["|"]


def test_stale_snapshot_running_job_fails_alone(c: SlurmTestCluster) -> None:
    """The job started after the read: Slurm rejects its OverSubscribe update ("no longer pending",
    FACTS b) and the other lines of the same batch still apply (FACTS d)."""
    p = c.submit("--gres=gpu:m40:1", "-t", "5")
    q = c.submit("--gres=gpu:k80:1", "-t", "5")
    c.wait_in_sprio(p, q)
    snap = c.reader().read()
    c.cancel(c.blockers["m40-1"])
    c.wait_state(p, "RUNNING")
    res = c.writer().apply(snap, [JobUpdate(p, oversubscribe=True), JobUpdate(q, site_factor=7)])
    assert res.rc == 1
    assert res.by_job()[p].status is UpdateStatus.FAILED
    assert "no longer pending" in res.by_job()[p].reason
    assert res.applied == (q,) and c.sprio()[q][1] == 7
    # the refusal path: with a fresh snapshot the writer does not even send it
    fresh = c.writer().apply(c.reader().read(), [JobUpdate(p, oversubscribe=False)])
    assert fresh.by_job()[p].status is UpdateStatus.REFUSED and fresh.rc is None
    c.cancel(p)
    c.wait_for(lambda: c.state(p) == "GONE", 20, "job gone")
    c.blockers["m40-1"] = c.submit("-w", "m40-1", "--gres=gpu:m40:1", "-t", "60")
    c.wait_state(c.blockers["m40-1"], "RUNNING")


def test_whole_array_written_before_its_split_task(c: SlurmTestCluster) -> None:
    arr = c.submit("-a", "0-2", "--gres=gpu:p100:1", "-t", "5")
    c.scontrol("update", f"JobId={arr}_1", "SiteFactor=1")  # splits task 1 into its own record
    c.wait_for(lambda: len(c.sprio()) >= 2, 10, "split task in sprio")
    snap = c.reader().read()
    split = next(j.id for j, s in zip(snap.pending, snap.pending_state, strict=True)
                 if s.array_job_id == arr and j.id != arr)
    res = c.writer().apply(snap, [JobUpdate(split, site_factor=50), JobUpdate(arr, site_factor=20)])
    assert set(res.applied) == {arr, split}
    prio = c.sprio()
    assert prio[arr][1] == 20 and prio[split][1] == 50  # the array line would have overwritten 50


def test_controller_down_then_restart(c: SlurmTestCluster) -> None:
    j = c.submit("--gres=gpu:p100:1", "-t", "5")
    c.wait_in_sprio(j)
    c.writer().apply(c.reader().read(), [JobUpdate(j, site_factor=123)])
    snap = c.reader().read()
    c.cluster.stop_controller()
    try:
        t0 = time.monotonic()
        with pytest.raises(ControllerDown):
            c.reader().read()  # scontrol ping: immediate when the port is closed
        assert time.monotonic() - t0 < 2
        t0 = time.monotonic()
        with pytest.raises(ControllerDown, match="Unable to contact"):
            c.reader(ping_first=False).read()  # squeue retries MessageTimeout-1 s
        assert time.monotonic() - t0 < MESSAGE_TIMEOUT + 2
        with pytest.raises(ControllerDown):
            c.writer().apply(snap, [JobUpdate(j, site_factor=456)])  # nothing sent
    finally:
        c.cluster.start_controller()
    c.wait_in_sprio(j)
    assert c.sprio()[j][1] == 123  # recovered from StateSaveLocation, the update while down not sent
    after = c.reader().read()
    assert j in {x.id for x in after.pending}


def test_frozen_controller_update_is_unknown_then_applied(c: SlurmTestCluster) -> None:
    """A hung slurmctld (SIGSTOP) answers nothing: the update comes back UNKNOWN, and is applied once
    the controller resumes (FACTS g), which is why UNKNOWN means "re-read", never "failed"."""
    j = c.submit("--gres=gpu:p100:1", "-t", "5")
    c.wait_in_sprio(j)
    snap = c.reader().read()
    c.cluster.freeze_controller()
    try:
        t0 = time.monotonic()
        res = c.writer(ping_first=False).apply(snap, [JobUpdate(j, site_factor=33)])
        assert res.unknown == (j,)
        assert time.monotonic() - t0 < MESSAGE_TIMEOUT + 8
    finally:
        c.cluster.freeze_controller(False)
    c.wait_for(lambda: c.sprio().get(j, (0, 0))[1] == 33, 15, "update applied after resume")
