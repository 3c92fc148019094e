from __future__ import annotations

import json
from pathlib import Path

import pytest

from rltune_daemon.cli.main import main
from rltune_daemon.domain.workload import Workload
from rltune_daemon.traces import load_workload, split_by_time, trace_stats


def test_split_by_time(testbed: Workload) -> None:
    train, test = split_by_time(testbed)
    assert len(train.jobs) == 922 and len(test.jobs) == 102
    assert train.jobs == testbed.jobs[:922]
    assert [j.id for j in test.jobs] == [j.id for j in testbed.jobs[922:]]
    offset = testbed.jobs[922].submit
    assert test.jobs[0].submit == 0.0 and test.meta["time_offset"] == offset
    assert test.jobs[-1].submit == pytest.approx(testbed.jobs[-1].submit - offset)
    assert train.cluster == testbed.cluster and test.estimates == testbed.estimates
    assert (train.meta["split"], test.meta["split"]) == ("train", "held_out")
    with pytest.raises(ValueError):
        split_by_time(testbed, held_out=1.0)


def test_trace_stats(testbed: Workload) -> None:
    s = trace_stats(testbed)
    assert s["jobs"] == 1024
    assert s["cluster"]["total_gpus"] == 13 and "2 x p100 (4 GPUs" in s["cluster"]["describe"]
    assert sum(v["jobs"] for v in s["gpu_sizes"].values()) == 1024
    assert set(s["gpu_sizes"]) == {"1", "2", "4", "8"}
    assert s["runtime_s"]["p10"] <= s["runtime_s"]["p50"] <= s["runtime_s"]["p90"] <= s["runtime_s"]["p99"]
    assert s["time_limit_s"]["p50"] >= s["runtime_s"]["p50"]
    assert s["span_days"] * 86400 == pytest.approx(testbed.jobs[-1].submit)
    assert s["arrival_rate_per_hour"] == pytest.approx(3600 * 1023 / testbed.jobs[-1].submit)
    assert s["cluster"]["gpu_types"] == {"k80": 4, "m40": 1, "p100": 8}
    json.dumps(s)


def test_cli_stats(capsys: pytest.CaptureFixture[str], fixtures: Path) -> None:
    assert main(["trace", "stats", "testbed", "--json", "--seed", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs"] == 1024 and out["estimates"] == "user"
    assert (
        main(
            [
                "trace",
                "stats",
                str(fixtures / "sacct_testbed.txt"),
                "--cluster",
                str(fixtures / "scontrol_testbed_nodes.txt"),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "jobs         5" in text and "13 GPUs" in text and "never_started 11" in text
    assert main(["trace", "stats", "helios", "--opt", "jobs=500", "--estimates", "oracle"]) == 0
    assert "estimates: oracle" in capsys.readouterr().out


def test_cli_stats_says_which_estimate_model_ran_and_why(capsys: pytest.CaptureFixture[str],
                                                         fixtures: Path, tmp_path: Path) -> None:
    """An SWF without requested times gets the user model by default: stats says so, and says when the
    file's own limits ran instead, with what was filled or raised."""
    bare = tmp_path / "bare.swf"
    bare.write_text("; MaxNodes: 2\n; MaxProcs: 8\n1 0 0 100 2 -1 -1 2 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
                    "2 10 0 50 2 -1 -1 2 -1 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["trace", "stats", str(bare)]) == 0
    text = capsys.readouterr().out
    note = "user: modelled requests; the default, as the trace records no requested times"
    assert f"time limits  {note}\n" in text
    assert main(["trace", "stats", str(bare), "--estimates", "oracle", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["estimates_note"] == "oracle: time limit = runtime"
    assert main(["trace", "stats", str(fixtures / "small.swf")]) == 0
    text = capsys.readouterr().out
    assert ("time limits  trace: the trace's own requested times; the default where a trace records them; "
            "1 unknown filled by the user model; 1 raised to the runtime\n") in text


def test_cli_stats_and_export_count_dropped_jobs_by_reason(capsys: pytest.CaptureFixture[str],
                                                           fixtures: Path, tmp_path: Path) -> None:
    assert main(["trace", "stats", str(fixtures / "small.swf")]) == 0
    # job 4 ran 0 s, job 5 asks 32 processors of a 4 x 4 machine
    assert "dropped      2 of 7 jobs: infeasible 1, runtime_not_positive 1\n" in capsys.readouterr().out
    assert main(["trace", "stats", "testbed", "--opt", "jobs=50"]) == 0
    assert "dropped      none\n" in capsys.readouterr().out
    out = tmp_path / "sacct.csv"
    assert main(["trace", "export", str(fixtures / "sacct_testbed.txt"), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "dropped at load: 11 of 16 jobs: never_started 11" in printed
    assert "time limits: trace: the trace's own requested times; the default where" in printed


def test_cli_jobs_without_partition_name_the_fix(capsys: pytest.CaptureFixture[str], fixtures: Path,
                                                 tmp_path: Path) -> None:
    f = tmp_path / "jobs.csv"
    f.write_text("id,submit,runtime,gpus\na,0,60,1\nb,10,60,2\n")
    assert main(["trace", "stats", str(f), "--cluster", str(fixtures / "cluster.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2 jobs have no partition" in err and "--opt default_partition=gpu" in err
    assert main(["trace", "stats", str(f), "--cluster", str(fixtures / "cluster.csv"), "--opt",
                 "default_partition=debug", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"] == 1  # debug holds only m40-1: the 2-GPU job drops
    # one partition: they run there; a partition the cluster lacks is remapped, and stats says so
    f.write_text("id,submit,runtime,gpus,partition\na,0,60,1,\nb,10,60,2,debug\n")
    assert main(["trace", "stats", str(f), "--cluster", str(fixtures / "scontrol_testbed_nodes.txt")]) == 0
    assert "remapped     1 jobs name a partition the cluster lacks: run in its first, gpu" in (
        capsys.readouterr().out)


def test_cli_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "stats", "/no/file.swf"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: /no/file.swf")
    assert main(["trace", "stats", "philly", "--opt", "scale"]) == 2
    assert "--opt wants key=value" in capsys.readouterr().err


def test_cli_cluster_by_name(capsys: pytest.CaptureFixture[str], fixtures: Path) -> None:
    assert main(["trace", "stats", str(fixtures / "jobs.csv"), "--cluster", "testbed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cluster"]["total_gpus"] == 13
    assert main(["trace", "stats", "testbed", "--cluster", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: --cluster nowhere: no such cluster file or bundled cluster name (names: "
                          "philly, helios, alibaba, alibaba-openb, testbed")


def test_cli_list_fit_export(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["trace", "list"]) == 0
    listed = capsys.readouterr().out
    assert "alibaba-openb" in listed and "--cluster NAME" in listed
    assert main(["trace", "fit", "testbed"]) == 0
    assert "Produced by `rltune trace fit testbed --seed 0`" in capsys.readouterr().out
    assert main(["trace", "fit", "alibaba", "--jobs", "2000", "--json"]) == 0
    assert "Job statistics" in json.loads(capsys.readouterr().out)["tables"]
    out, nodes = tmp_path / "tb.csv", tmp_path / "tb.nodes"
    assert main(["trace", "export", "testbed", "-o", str(out), "--cluster-out", str(nodes)]) == 0
    again = load_workload(str(out), cluster=str(nodes))
    assert again.jobs == load_workload("testbed").jobs
