"""Snapshot assembly from captured outputs: the conventions of assemble.py, role by role."""

from __future__ import annotations

from rltune_daemon.domain import Job, PendingState, Snapshot
from rltune_daemon.domain.updates import ReadInfo
from rltune_daemon.slurm.assemble import UNLIMITED_DEFAULT_S, build_snapshot, request_gpus
from rltune_daemon.slurm.parse import JobRecord, NodeRecord, TresRecord


def _pending(snap: Snapshot) -> dict[str, tuple[Job, PendingState]]:
    return {j.id: (j, s) for j, s in zip(snap.pending, snap.pending_state, strict=True)}


def test_pending_requests(captured_snapshot: tuple[Snapshot, ReadInfo], meta: dict[str, str]) -> None:
    snap, _ = captured_snapshot
    pend = {j.id: j for j in snap.pending}
    expect = {  # role: (gpus, types, limit s, cpus, mem MB, nodes, user)
        "pd_typed": (4, ("p100",), 3600, 1, 1000, 1, "root"),
        "pd_untyped": (2, (), 2700, 1, 1000, 1, "root"),
        "pd_gpus_per_job": (3, ("p100",), 1800, 1, 1000, 1, "root"),
        "pd_gpus_per_node": (4, ("k80",), 1800, 2, 8192, 2, "root"),
        "pd_gpus_per_task": (3, ("k80",), 1800, 3, 3000, 2, "root"),
        "pd_notime": (1, ("m40",), UNLIMITED_DEFAULT_S, 1, 1000, 1, "root"),
        "pd_user": (1, ("p100",), 1500, 1, 1000, 1, "rltuser"),
    }
    for role, (g, t, lim, c, m, n, u) in expect.items():
        j = pend[meta[role]]
        got = (j.gpus, j.gpu_types, j.time_limit, j.cpus, j.mem_mb, j.nodes, j.user)
        assert got == (g, t, lim, c, m, n, u), role
        assert j.submit > 1.7e9 and j.runtime is None
    assert pend[meta["pd_multipart"]].partition == "hipri"


def test_pending_state(captured_snapshot: tuple[Snapshot, ReadInfo], meta: dict[str, str]) -> None:
    snap, info = captured_snapshot
    p = _pending(snap)
    held = p[meta["pd_held"]][1]
    assert held.held and held.priority == 0
    admin = p[meta["pd_admin"]][1]
    assert admin.admin_priority and not admin.held
    assert p[meta["pd_site"]][1].site_factor == 500
    assert p[meta["pd_ovs"]][1].oversubscribe == "YES"
    nodes = p[meta["pd_nodes"]][1]
    assert (nodes.req_nodes, nodes.exc_nodes) == ("p100-2", "k80-[1-2]")
    assert p[meta["pd_negnice"]][1].nice == -200
    assert sum(s.admin_priority for _, s in p.values()) == 1
    # arrays: the unsplit record (3 tasks) and the task split off by an update
    arr, split = meta["pd_array"], meta["pd_array_split"]
    assert p[arr][1].array_job_id == arr and p[split][1].array_job_id == arr
    assert info.array_tasks == {arr: 3}
    assert info.display_ids[arr] == f"{arr}_[0,2-3]" and info.display_ids[split] == f"{arr}_1"
    assert info.site_factor_unknown == frozenset({meta["pd_held"]})
    assert [j.id for j in snap.pending].count(arr) == 1


def test_running_allocations(captured_snapshot: tuple[Snapshot, ReadInfo], meta: dict[str, str]) -> None:
    snap, _ = captured_snapshot
    run = {r.job.id: r for r in snap.running}
    assert set(run) == {meta[k] for k in meta if k.startswith("run_")}
    two = run[meta["run_2node_k80"]]
    assert [(a.node, a.gpus, a.cpus, a.mem_mb) for a in two.allocation] == [("k80-1", 2, 1, 1000),
                                                                            ("k80-2", 2, 1, 1000)]
    assert two.est_end - two.start == 600
    ovs = run[meta["run_p100x2_ovs"]].allocation[0]
    assert (ovs.node, ovs.gpus, ovs.cpus, ovs.mem_mb) == ("p100-2", 2, 4, 8192)
    gpus = run[meta["run_p100x2_gpus"]].allocation[0]
    assert (gpus.node, gpus.gpus) == ("p100-2", 2)  # --gpus=p100:2: per-job request placed on one node
    per_node: dict[str, int] = {}
    for r in snap.running:
        for a in r.allocation:
            per_node[a.node] = per_node.get(a.node, 0) + a.gpus
    assert per_node == {n.name: n.gpus_alloc for n in snap.nodes}


def test_nodes_and_partitions(captured_snapshot: tuple[Snapshot, ReadInfo]) -> None:
    snap, _ = captured_snapshot
    nodes = {n.name: n for n in snap.nodes}
    assert {n: (x.gpu_type, x.gpus, x.cpus, x.mem_mb) for n, x in nodes.items()} == {
        "p100-1": ("p100", 4, 8, 64000), "p100-2": ("p100", 4, 8, 64000), "k80-1": ("k80", 2, 8, 32000),
        "k80-2": ("k80", 2, 8, 32000), "m40-1": ("m40", 1, 4, 16000),
    }
    assert not nodes["m40-1"].usable and nodes["m40-1"].gpus_free == 0
    assert all(nodes[n].usable for n in nodes if n != "m40-1")
    assert nodes["p100-1"].partitions == ("gpu", "hipri")
    assert [(p.name, p.priority_tier) for p in snap.partitions] == [("gpu", 1), ("hipri", 2)]
    cluster = snap.cluster()
    assert cluster.total_gpus == 13


def _rec(**over: object) -> JobRecord:
    base: dict[str, object] = dict(
        job_id="1", array_job_id="", array_task="", state="PENDING", user="u", account="",
        partitions=("gpu",), qos="", priority=10, nice=0, submit=1.8e9, start=None,
        time_limit=float("inf"), nodes=1, cpus=2,
        min_memory_mb=500, tres_per_node="", oversubscribe="OK", node_list="", req_nodes="", exc_nodes="",
        reason="Priority",
    )
    base.update(over)
    return JobRecord(**base)  # type: ignore[arg-type]


def _node(name: str, part: str, max_time: float) -> NodeRecord:
    return NodeRecord(name, 2, "k80", 0, "idle", 8, 0, 32000, 0, part, False, 1, 1, max_time)


def test_unlimited_uses_partition_max_time_then_default() -> None:
    tres = {"1": TresRecord("1", "", "", 1, {"cpu": "2", "mem": "1000M"})}
    snap, _ = build_snapshot(0, [_rec()], tres, {}, [_node("n1", "gpu", 7200.0)])
    assert snap.pending[0].time_limit == 7200
    snap, _ = build_snapshot(0, [_rec()], tres, {}, [_node("n1", "gpu", float("inf"))], unlimited_s=99)
    assert snap.pending[0].time_limit == 99


def test_race_between_squeue_calls() -> None:
    """A pending job missing from the -O output left the queue in between: skipped, said why. A running
    job falls back to %b/%m."""
    recs = [_rec(), _rec(job_id="2", state="RUNNING", node_list="n1", start=1.8e9, time_limit=60.0,
                         tres_per_node="gres:gpu:k80:1", nodes=1)]
    snap, info = build_snapshot(0, recs, {}, {}, [_node("n1", "gpu", 60.0)])
    assert snap.pending == () and info.skipped == [("1", "left the queue between the two squeue calls")]
    assert snap.running[0].allocation[0].gpus == 1 and snap.running[0].job.mem_mb == 500


def test_request_gpus_precedence() -> None:
    t = TresRecord("1", "gres:gpu:a100:3", "gres:gpu:1", 4, {})
    assert request_gpus(_rec(tres_per_node="gres:gpu:v100:2", nodes=2), t) == (4, "v100")
    assert request_gpus(_rec(), t) == (3, "a100")
    assert request_gpus(_rec(), TresRecord("1", "", "gres:gpu:1", 4, {})) == (4, "")
    assert request_gpus(_rec(), None) == (0, "")


def test_missing_submit_time_skips_record() -> None:
    snap, info = build_snapshot(0, [_rec(submit=None)], {"1": TresRecord("1", "", "", 1, {})}, {}, [])
    assert snap.pending == () and info.skipped[0][0] == "1"


def test_pending_jobs_come_in_slurms_tie_order() -> None:
    """squeue lists jobs in its own order; the planner breaks ties of priority and submit time by row, so
    the snapshot holds them as slurmctld breaks those ties: by job id, an array's tasks by their array's
    job id and then task id (a 5-digit id after a 2-digit one, not as text)."""
    ids = [("15", "", ""), ("9", "", ""), ("120", "100", "3"), ("100", "100", "0"), ("10", "", "")]
    recs = [_rec(job_id=j, array_job_id=a, array_task=t, priority=int(j)) for j, a, t in ids]
    tres = {j: TresRecord(j, "", "", 1, {"cpu": "2", "mem": "1000M"}) for j, _, _ in ids}
    snap, _ = build_snapshot(0, recs, tres, {}, [_node("n1", "gpu", 7200.0)])
    assert [j.id for j in snap.pending] == ["9", "10", "15", "100", "120"]
    assert [s.priority for s in snap.pending_state] == [9, 10, 15, 100, 120]  # each state with its job
