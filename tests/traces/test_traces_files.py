"""Files a user brings: SWF, sacct -P exports, plain CSV, cluster files; and their malformed cases."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from rltune_daemon.errors import InputFileError, UserError
from rltune_daemon.traces import load_workload
from rltune_daemon.traces.export import write_cluster, write_csv

# ---------------------------------------------------------------- SWF


def test_swf(fixtures: Path) -> None:
    w = load_workload(str(fixtures / "small.swf"))
    assert w.estimates == "trace"
    assert w.cluster.resource == "cpu"
    assert len(w.cluster.nodes) == 4 and w.cluster.total_gpus == 16 and w.cluster.gpu_types == ("",)
    assert [j.id for j in w.jobs] == ["2", "1", "3", "6", "7"]  # by submit, stable for 6/7
    assert [j.submit for j in w.jobs] == [0, 50, 150, 450, 450]
    assert [j.gpus for j in w.jobs] == [4, 8, 4, 2, 16]  # job 2: requested -1 -> allocated
    by_id = {j.id: j for j in w.jobs}
    assert by_id["1"].time_limit == 7200 and by_id["1"].user == "u3" and by_id["1"].account == "q1"
    assert by_id["6"].time_limit == 900  # asked 600, ran 900: raised to the runtime
    assert by_id["6"].account == "p3"  # queue -1 -> partition
    assert by_id["3"].time_limit >= 1200  # requested -1: user model
    assert w.meta["dropped"] == {"runtime_not_positive": 1, "infeasible": 1}  # job 4 (run 0), job 5 (32 > 16)
    assert w.meta["estimates"] == {
        "model": "trace",
        "cap_s": 86400.0,
        "filled_by_user_model": 1,
        "raised_to_runtime": 1,
        "chosen": "default",  # no --estimates: the file's own limits, as it has some
    }
    assert w.meta["header"]["MaxNodes"] == "4"


def test_compressed_file(fixtures: Path, tmp_path: Path) -> None:
    packed = tmp_path / "small.swf.xz"
    packed.write_bytes(lzma.compress((fixtures / "small.swf").read_bytes()))
    assert load_workload(str(packed)).jobs == load_workload(str(fixtures / "small.swf")).jobs
    broken = tmp_path / "broken.swf.xz"
    broken.write_bytes(b"not xz at all")
    with pytest.raises(UserError, match="corrupt compressed file"):
        load_workload(str(broken))


def test_swf_user_model_and_malformed(fixtures: Path, tmp_path: Path) -> None:
    w = load_workload(str(fixtures / "small.swf"), estimates="user", seed=2)
    assert w.estimates == "user" and all(j.time_limit <= 86400 for j in w.jobs)
    bad = tmp_path / "bad.swf"
    bad.write_text("; MaxProcs: 8\n1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n2 5 0 10 1 -1\n")
    with pytest.raises(InputFileError, match=r"bad.swf:3: expected 18 fields, got 6"):
        load_workload(str(bad))
    bad.write_text("1 0 0 10 x -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(InputFileError, match=r"bad.swf:1: non-numeric field"):
        load_workload(str(bad))


# ---------------------------------------------------------------- sacct


def test_sacct_sample(fixtures: Path) -> None:
    w = load_workload(str(fixtures / "sacct_testbed.txt"))
    assert [j.id for j in w.jobs] == ["1", "2", "4", "5", "14"]
    got = {
        j.id: (j.gpus, j.gpu_types, j.nodes, j.cpus, j.mem_mb, j.runtime, j.time_limit, j.user, j.account)
        for j in w.jobs
    }
    assert got == {
        "1": (4, ("p100",), 1, 1, 1000, 8.0, 1800.0, "root", "root"),
        "2": (2, ("p100",), 1, 4, 8192, 8.0, 1200.0, "root", "root"),
        "4": (1, ("m40",), 1, 1, 1000, 8.0, 600.0, "rltuser", "research"),
        "5": (2, ("k80",), 2, 2, 2000, 8.0, 600.0, "root", "root"),
        "14": (2, ("p100",), 1, 1, 1000, 6.0, 300.0, "root", "root"),
    }
    assert [j.submit for j in w.jobs] == [0, 0, 0, 0, 3]
    assert w.estimates == "trace"
    assert w.meta["dropped"] == {"never_started": 11}  # 10 pending jobs + the pending array 12_[0-3]
    assert w.meta["cluster_inferred"] is True
    assert sorted((n.gpu_type, n.gpus) for n in w.cluster.nodes) == [
        ("k80", 1),
        ("k80", 1),
        ("m40", 1),
        ("p100", 4),
    ]


def test_sacct_with_real_cluster(fixtures: Path) -> None:
    w = load_workload(
        str(fixtures / "sacct_testbed.txt"), cluster=str(fixtures / "scontrol_testbed_nodes.txt")
    )
    assert len(w.jobs) == 5 and w.cluster.total_gpus == 13
    assert w.cluster.partition_names == ("gpu",)
    assert w.meta["cluster_inferred"] is False


def test_sacct_steps_limits_and_cpu_jobs(tmp_path: Path) -> None:
    f = tmp_path / "export.txt"
    f.write_text(
        "JobID|User|Partition|Submit|Start|End|ReqTRES|Timelimit|QOS\n"
        "7|ann|gpu|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T01:01:00|cpu=4,gres/gpu=2,node=1|Partition_Limit|normal\n"
        "7.batch|ann|gpu|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T01:01:00|cpu=4|00:30:00|normal\n"
        "8|bob|cpu|2024-01-01T00:10:00|2024-01-01T00:10:00|2024-01-01T00:20:00|cpu=1,mem=1G|1:00:00|normal\n"
        "9|bob|gpu|2024-01-01T00:20:00|2024-01-01T00:20:00|Unknown|gres/gpu=1|1:00:00|normal\n"
        "10|bob|gpu|2024-01-01T00:30:00|2024-01-01T00:30:00|2024-01-01T02:30:00|gres/gpu:a100=1|01:00:00|high\n"
    )
    w = load_workload(str(f))
    assert [j.id for j in w.jobs] == ["7", "10"]
    assert w.meta["job_steps_skipped"] == 1
    assert w.meta["dropped"] == {"cpu_only": 1, "still_running": 1}
    assert w.meta["estimates"]["filled_by_user_model"] == 1 and w.meta["estimates"]["raised_to_runtime"] == 1
    assert w.jobs[1].time_limit == 7200 and w.jobs[1].qos == "high" and w.jobs[1].partition == "gpu"


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ("JobID|Submit|Start\n1|x|y\n", r":1: header lacks end, timelimit, ReqTRES or AllocTRES"),
        (
            "JobID|Submit|Start|End|ReqTRES|Timelimit\n1|2024-01-01T00:00:00|2024-01-01T00:00:00\n",
            r":2: expected 6 '\|'-separated fields, got 3",
        ),
        (
            "JobID|Submit|Start|End|ReqTRES|Timelimit\n1|yesterday|2024-01-01T00:00:00|2024-01-01T00:01:00|gres/gpu=1|1\n",
            r":2: job 1: not a Slurm timestamp",
        ),
        (
            "JobID|Submit|Start|End|ReqTRES|Timelimit\n1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:01:00|"
            "gres/gpu|1\n",
            r":2: job 1: bad TRES item",
        ),
        (
            "JobID|Submit|Start|End|ReqTRES|Timelimit\n1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:01:00|"
            "gres/gpu=1|soon\n",
            r":2: job 1: not a Slurm duration",
        ),
    ],
)
def test_sacct_malformed(tmp_path: Path, body: str, pattern: str) -> None:
    f = tmp_path / "sacct.txt"
    f.write_text(body)
    with pytest.raises(InputFileError, match=pattern) as err:
        load_workload(str(f))
    assert "\n" not in str(err.value) and str(f) in str(err.value)


# ---------------------------------------------------------------- CSV


def test_csv(fixtures: Path) -> None:
    w = load_workload(str(fixtures / "jobs.csv"), cluster=str(fixtures / "cluster.csv"))
    assert [j.id for j in w.jobs] == ["a2", "a1", "a3", "a4"]
    assert [j.submit for j in w.jobs] == [0, 1800, 1800, 5400]
    by_id = {j.id: j for j in w.jobs}
    assert by_id["a1"].time_limit == 3600  # Slurm duration
    assert by_id["a3"].gpu_types == ("k80", "p100")
    assert by_id["a3"].time_limit >= 120  # empty: user model
    assert (by_id["a2"].cpus, by_id["a2"].mem_mb, by_id["a2"].nodes) == (8, 64000, 1)
    assert by_id["a4"].nodes == 2 and by_id["a4"].time_limit == 600
    assert w.estimates == "trace"
    assert w.cluster.partition_names == ("gpu", "debug")


def test_jobs_without_partition_on_a_cluster_of_several(fixtures: Path, tmp_path: Path) -> None:
    """Jobs that name no partition go nowhere by guesswork where the cluster has several: an error naming
    the fix, or the ``default_partition`` option; a one-partition cluster takes them as before."""
    f = tmp_path / "jobs.csv"
    f.write_text("id,submit,runtime,gpus,partition\na,0,60,1,gpu\nb,10,60,1,\nc,20,60,1,\nd,30,60,1,debug\n")
    several = str(fixtures / "cluster.csv")  # partitions gpu, debug
    with pytest.raises(UserError) as err:
        load_workload(str(f), cluster=several)
    assert str(err.value) == (
        "jobs.csv (csv): 2 jobs have no partition and the cluster has partitions gpu, debug: add a "
        "partition column to the trace, or map them with the trace option default_partition=gpu "
        "(--opt default_partition=gpu)"
    )
    w = load_workload(str(f), cluster=several, default_partition="debug")
    assert [j.partition for j in w.jobs] == ["gpu", "debug", "debug", "debug"]
    assert w.meta["partition_defaulted"] == 2
    with pytest.raises(UserError, match=r"default_partition='cpu' is not a partition of the cluster "
                                        r"\(partitions: gpu, debug\)"):
        load_workload(str(f), cluster=several, default_partition="cpu")
    one = load_workload(str(f), cluster=str(fixtures / "scontrol_testbed_nodes.txt"))
    assert [j.partition for j in one.jobs] == ["gpu", "", "", ""]  # the only partition: as before
    assert one.meta["partition_remapped"] == 1  # debug: not there
    # a cluster inferred from the jobs has every node in every partition: the first serves, as before
    inferred = load_workload(str(f))
    assert inferred.cluster.partition_names == ("gpu", "debug")
    assert [j.partition for j in inferred.jobs] == ["gpu", "", "", "debug"]
    # a trace whose jobs all name a partition is untouched by the rule
    assert load_workload(str(fixtures / "jobs.csv"), cluster=several).meta.get("partition_defaulted") is None


def test_csv_round_trip(tmp_path: Path) -> None:
    w = load_workload("testbed", jobs=200, seed=5)
    write_csv(w, tmp_path / "tb.csv")
    write_cluster(w.cluster, tmp_path / "tb.nodes")
    again = load_workload(str(tmp_path / "tb.csv"), cluster=str(tmp_path / "tb.nodes"))
    assert again.jobs == w.jobs
    assert again.cluster.nodes == w.cluster.nodes and again.cluster.partitions == w.cluster.partitions


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ("id,submit,runtime,gpus,timelimit\n", r":1: unknown column\(s\) timelimit"),
        ("id,submit,gpus\n", r":1: missing column\(s\) runtime"),
        ("id,submit,runtime,gpus\na,0,10,1\nb,5,ten,1\n", r":3: bad value"),
        ("id,submit,runtime,gpus\na,0,10,1\na,5,10,1\n", r":3: duplicate id 'a'"),
        ("id,submit,runtime,gpus\na,0,10,-1\n", r":2: gpus, cpus, mem_mb and nodes must be >= 0"),
        ("id,submit,runtime,gpus\na,0,10\n", r":2: expected 4 fields, got 3"),
        ("id,submit,runtime,gpus\na,0,10,0\n", r"no job requests a GPU"),
    ],
)
def test_csv_malformed(tmp_path: Path, body: str, pattern: str) -> None:
    f = tmp_path / "t.csv"
    f.write_text(body)
    with pytest.raises(InputFileError, match=pattern):
        load_workload(str(f))


# ---------------------------------------------------------------- cluster files and detection


def test_cluster_files(fixtures: Path, tmp_path: Path) -> None:
    from rltune_daemon.traces import clusterfile

    csv_spec = clusterfile.load(fixtures / "cluster.csv")
    assert [n.name for n in csv_spec.nodes] == ["p100-1", "p100-2", "k80-1", "k80-2", "m40-1"]
    assert csv_spec.nodes[-1].partitions == ("gpu", "debug")
    real = clusterfile.load(fixtures / "scontrol_testbed_nodes.txt")
    assert real.total_gpus == 13 and real.partition_names == ("gpu",)
    f = tmp_path / "c.csv"
    f.write_text("n,2,v100,8\n")
    with pytest.raises(InputFileError, match=r"c.csv:1: expected 6 or 7 columns"):
        clusterfile.load(f)
    f.write_text("n,two,v100,8,32,1000\n")
    with pytest.raises(InputFileError, match=r"c.csv:1: count, gpus, cpus and mem_mb must be integers"):
        clusterfile.load(f)
    f.write_text("NodeName=a Gres=gpu:v100:4 RealMemory=1000\n")
    with pytest.raises(InputFileError, match=r"c.csv:1: node a has no CPUTot"):
        clusterfile.load(f)
    f.write_text("cpu,4,,0,32,64000\n")
    assert clusterfile.load(f).resource == "cpu"


def test_cluster_by_bundled_name(fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--cluster NAME`` lends a bundled trace's default cluster; a file of that name still wins."""
    from rltune_daemon.traces import helios, testbed

    w = load_workload(str(fixtures / "sacct_testbed.txt"), cluster="testbed")
    assert w.cluster == testbed.cluster() and w.meta["cluster_inferred"] is False
    assert load_workload("testbed", jobs=50, cluster="HELIOS").cluster == helios.cluster()
    for name in ("philly", "alibaba", "alibaba-openb"):  # each builds without its trace's jobs
        assert load_workload(str(fixtures / "jobs.csv"), cluster=name).cluster.total_gpus > 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "philly").write_text("solo,1,p100,8,48,480000\n")
    assert load_workload("testbed", jobs=50, cluster="philly").cluster.name == "philly"
    assert [n.name for n in load_workload("testbed", jobs=50, cluster="philly").cluster.nodes] == ["solo-1"]


def test_missing_and_unknown(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^/no/such.swf: no such trace file or trace name"):
        load_workload("/no/such.swf")
    with pytest.raises(UserError, match=r"no such file"):
        load_workload("philly", path=str(tmp_path / "missing.csv"))
    with pytest.raises(UserError, match=r"no such cluster file or bundled cluster name \(names: philly, "):
        load_workload("testbed", cluster=str(tmp_path / "missing.nodes"))
    odd = tmp_path / "odd.txt"
    odd.write_text("hello world\n")
    with pytest.raises(UserError, match="unrecognised trace format"):
        load_workload(str(odd))
    with pytest.raises(UserError, match="records no requested time limits"):
        load_workload("helios", estimates="trace", jobs=10)
    with pytest.raises(UserError, match="unknown estimates model"):
        load_workload("testbed", estimates="guess")
    with pytest.raises(UserError, match="seed must be >= 0"):
        load_workload("testbed", seed=-1)
