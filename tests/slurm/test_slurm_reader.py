"""SlurmReader end to end on fake programs that replay captured outputs; pyslurm backend detection;
local cluster tooling that needs no root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from fakebin import FakeBin

from rltune_daemon.errors import UserError
from rltune_daemon.slurm import localcluster
from rltune_daemon.slurm.errors import ControllerDown, ParseError
from rltune_daemon.slurm.pyslurm_backend import PyslurmReader, job_records, load_pyslurm
from rltune_daemon.slurm.reader import (
    SlurmReader,
    SnapshotReader,
    queue_argv,
    sinfo_argv,
    sprio_argv,
    squeue_jobs_argv,
    squeue_tres_argv,
)
from rltune_daemon.slurm.runner import SlurmRunner

REPO = Path(__file__).resolve().parents[2]


def test_read_issues_five_calls(fake: FakeBin, meta: dict[str, str]) -> None:
    runner = SlurmRunner(bin_dir=str(fake.path), max_calls_per_cycle=7)
    reader = SlurmReader(runner)
    assert isinstance(reader, SnapshotReader)
    snap = reader.read()
    progs = [" ".join(c.split()[:2]) if c.startswith("scontrol") else c.split()[0] for c in fake.calls()]
    assert progs == ["scontrol ping", "sprio", "squeue", "squeue", "sinfo"]  # sprio first: it vouches
    info = reader.last
    assert info is not None and info.calls == 5
    assert [j for j, _ in info.skipped] == [meta["pd_long_account"]]
    assert info.unparsed == {meta["pd_long_account"]}  # listed, so it exists; not in the Snapshot
    assert meta["pd_long_account"] not in {j.id for j in snap.pending}
    assert len(snap.pending) == 18 and len(snap.running) == 5 and len(snap.nodes) == 5
    assert snap.source == "slurm" and snap.clock > 1.7e9
    reader.read()  # a new cycle: the budget is reset by read()
    assert runner.calls_this_cycle == 5


def test_partition_filter_is_passed_to_every_read() -> None:
    parts = ("gpu", "hipri")
    for argv in (squeue_jobs_argv(parts), squeue_tres_argv(parts), queue_argv(parts), sprio_argv(parts),
                 sinfo_argv(parts)):
        assert argv[-2:] == ["-p", "gpu,hipri"]
    assert "-a" not in sinfo_argv(("gpu",))  # sinfo: "Conflicting options, -a and -p" (exit 1)
    assert "-a" in sinfo_argv()


def test_controller_down_skips_the_cycle(fake: FakeBin, captured: Path) -> None:
    fake.add("scontrol", stdout=(captured / "ping_down.txt").read_text(), rc=1)
    with pytest.raises(ControllerDown):
        SlurmReader(SlurmRunner(bin_dir=str(fake.path))).read()
    assert fake.calls() == ["scontrol ping"]


def test_controller_down_without_ping(fake: FakeBin, captured: Path) -> None:
    fake.add("squeue", stderr=(captured / "squeue_down.stderr").read_text(), rc=1)
    with pytest.raises(ControllerDown, match="Unable to contact"):
        SlurmReader(SlurmRunner(bin_dir=str(fake.path)), ping_first=False).read()


def test_unexpected_output_is_a_parse_error(fake: FakeBin) -> None:
    fake.add("sinfo", stdout="NODELIST STATE\nk80-1 idle\n")
    with pytest.raises(ParseError, match="sinfo line 1"):
        SlurmReader(SlurmRunner(bin_dir=str(fake.path))).read()


# ---- pyslurm backend ---------------------------------------------------------------------------


def test_pyslurm_missing_is_one_line_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyslurm", None)  # import pyslurm -> ImportError
    with pytest.raises(UserError) as info:
        load_pyslurm()
    msg = str(info.value)
    assert "\n" not in msg and "25.11" in msg and "CLI reader" in msg
    with pytest.raises(UserError):
        PyslurmReader(SlurmRunner())


def test_pyslurm_version_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyslurm", SimpleNamespace(__version__="25.11.2"))
    with pytest.raises(UserError, match=r"does not match the local Slurm 22\.05\.8"):
        load_pyslurm("22.05.8")
    assert load_pyslurm("25.11.0").__version__ == "25.11.2"  # type: ignore[attr-defined]


def _pyslurm_job(**kw: object) -> SimpleNamespace:
    """A pyslurm 25.11 ``Job`` with the attributes the reader uses, as a live 25.11 returns them."""
    base: dict[str, object] = dict(
        id=5, state="PENDING", array_id=None, array_task_id=None, array_tasks_waiting=None, user_name="u",
        account=None, partition="gpu", qos=None, priority=100, nice=0, submit_time=1.8e9, start_time=None,
        time_limit=None, num_nodes=1, cpus=2, memory_per_node=None, memory_per_cpu=1000,
        gres_per_node={"gres/gpu:p100": 2}, resource_sharing="OK", allocated_nodes=None, required_nodes=None,
        excluded_nodes="k80-1", state_reason="Nodes required for job are DOWN, DRAINED or reserved")
    return SimpleNamespace(**(base | kw))


def test_pyslurm_records_mapping() -> None:
    done = _pyslurm_job(id=6, state="COMPLETED")
    array = _pyslurm_job(id=7, array_id=7, array_tasks_waiting="0,2-3%2")
    parsed = job_records([_pyslurm_job(), done, array])
    tasks = [(r.job_id, r.array_task) for r in parsed.records]
    assert tasks == [("5", ""), ("7", "0"), ("7", "2"), ("7", "3")]
    rec = parsed.records[0]
    assert (rec.tres_per_node, rec.exc_nodes, rec.account, rec.qos) == ("gres/gpu:p100:2", "k80-1", "", "")
    assert rec.time_limit == float("inf") and rec.min_memory_mb == 1000 and rec.array_job_id == ""
    assert rec.reason == "Nodes required for job are DOWN,"  # squeue's %32r
    assert parsed.records[1].array_job_id == "7" and parsed.listed[1] == ("7", "PENDING")
    assert [r.job_id for r in job_records([_pyslurm_job()], ["hipri"]).records] == []


# ---- local cluster tooling (no root needed) ---------------------------------------------------------


def test_scripts_ship_as_package_data() -> None:
    d = localcluster.script_dir()
    for name in ("up.sh", "down.sh", "slurm.conf.in", "gres.conf.in", "slurmdbd.conf.in"):
        assert (d / name).is_file(), name
        deploy = REPO / "deploy" / "local-slurm" / name
        assert deploy.resolve() == (d / name).resolve(), f"deploy/local-slurm/{name} must link to the package"
    for script in ("up.sh", "down.sh"):
        subprocess.run(["bash", "-n", str(d / script)], check=True)


def test_conf_template_matches_the_paper_testbed() -> None:
    conf = (localcluster.script_dir() / "slurm.conf.in").read_text()
    for needle in ("Gres=gpu:p100:4", "Gres=gpu:k80:2", "Gres=gpu:m40:1", "PriorityType=priority/multifactor",
                   "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "DefMemPerCPU=",
                   "PriorityWeightJobSize=", "PriorityWeightPartition=", "MessageTimeout=@MSG_TIMEOUT@"):
        assert needle in conf, needle


def test_start_needs_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(localcluster.LocalClusterError, match="needs root"):
        localcluster.LocalCluster(tmp_path).start()


def test_cluster_handles_without_a_cluster(tmp_path: Path) -> None:
    c = localcluster.LocalCluster(tmp_path / "nothing", message_timeout=3)
    assert not c.is_running()
    assert c.env()["SLURM_CONF"] == str(tmp_path / "nothing" / "etc" / "slurm.conf")
    assert c.runner().slurm_conf == str(c.conf)
    assert "nothing to stop" in c.stop()  # down.sh on an empty state dir is a no-op


def test_a_private_cluster_never_gives_two_daemons_one_port(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    """Ports come from one free block: separate draws once gave slurmctld and slurmdbd the same port
    (a CI run failed with "Address already in use"). Draws are forced to collide here."""
    same = SimpleNamespace(randrange=lambda lo, hi: 35264)  # every draw the same port
    monkeypatch.setattr(localcluster.random, "Random", lambda: same)
    monkeypatch.setattr(localcluster, "_port_free", lambda port: True)
    for with_dbd in (False, True):
        c = localcluster.LocalCluster.private(tmp_path, with_dbd=with_dbd, message_timeout=3)
        used = [c.ctld_port, *range(c.slurmd_port or 0, (c.slurmd_port or 0) + 5)]
        if with_dbd:
            used += [c.dbd_port, c.mysql_port]
        assert len(set(used)) == len(used) == (8 if with_dbd else 6)
        assert c.message_timeout == 3 and c.with_dbd is with_dbd
    assert localcluster.LocalCluster.private(tmp_path).dbd_port is None
