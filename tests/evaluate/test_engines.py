"""``--engine slurm``: an evaluation's runs as a Slurm job array (submitit) on the project's real local
Slurm, with the same numbers as on this machine's cores."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.engines import Engine, deal, parse_engine
from rltune_daemon.evaluate.runner import EvalConfig, evaluate
from slurm_fixtures import WAIT_S, SlurmTestCluster


def test_engine_flag_and_dealing() -> None:
    assert parse_engine("slurm:gpu", Path("/x")) == Engine("slurm", "gpu", Path("/x"))
    assert parse_engine("local").kind == "local" and parse_engine("slurm").partition == ""
    for bad in ("ray", "local:gpu", ""):
        with pytest.raises(UserError, match="expected local, slurm or slurm:PARTITION"):
            parse_engine(bad)
    tasks = [(p, k) for p in ("a", "b") for k in range(3)]
    chunks = deal(tasks, 4)
    assert len(chunks) == 4 and sorted(t for c in chunks for t in c) == sorted(tasks)
    assert deal(tasks, 50) == [[t] for t in tasks]


@pytest.mark.slurm
def test_a_slurm_array_gives_the_numbers_this_machine_gives(
        slurm_cluster: SlurmTestCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in slurm_cluster.env.items():  # sbatch/squeue find this cluster as a site's would
        monkeypatch.setenv(key, value)
    slurm_cluster.cancel_all()
    cfg = EvalConfig("testbed", ("sjf", "multifactor", "daemon:sjf"), windows=2, window_size=100, jobs=3,
                     opts={"jobs": "2000"})
    here = evaluate(replace(cfg, jobs=1), progress=False)
    folder = tmp_path / "jobs"
    there = evaluate(cfg, progress=False, engine=Engine("slurm", "gpu", folder, wait_s=2 * WAIT_S))
    for policy in cfg.policies:
        assert there["policies"][policy]["per_window"] == here["policies"][policy]["per_window"]
        assert there["policies"][policy]["waits"] == here["policies"][policy]["waits"]
    assert (there["config"]["engine"], there["config"]["workers"]) == ("slurm:gpu", 3)
    assert not folder.exists()  # nothing left behind after a run that succeeded


@pytest.mark.slurm
def test_a_refused_array_is_one_line_naming_the_fix(
        slurm_cluster: SlurmTestCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in slurm_cluster.env.items():
        monkeypatch.setenv(key, value)
    cfg = EvalConfig("testbed", ("sjf",), windows=1, window_size=50, opts={"jobs": "2000"})
    with pytest.raises(UserError) as info:
        evaluate(cfg, progress=False, engine=Engine("slurm", "nosuchpartition", tmp_path / "jobs"))
    assert "sbatch refused the array" in str(info.value) and "\n" not in str(info.value)


def test_a_bad_engine_is_one_line_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    from rltune_daemon.cli.main import main

    assert main(["evaluate", "--trace", "testbed", "--engine", "ray"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--engine 'ray'" in err


@pytest.mark.slurm
def test_an_array_that_cannot_finish_is_cancelled_not_left_behind(
        slurm_cluster: SlurmTestCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in slurm_cluster.env.items():
        monkeypatch.setenv(key, value)
    slurm_cluster.cancel_all()
    slurm_cluster.run("scontrol", "update", "PartitionName=hipri", "State=DOWN")  # tasks queue, never start
    try:
        cfg = EvalConfig("testbed", ("sjf",), windows=2, window_size=50, jobs=2, opts={"jobs": "2000"})
        with pytest.raises(UserError, match=r"2 array task\(s\) not done after 5 s .*; cancelled"):
            evaluate(cfg, progress=False, engine=Engine("slurm", "hipri", tmp_path / "jobs", wait_s=5))
        slurm_cluster.wait_for(lambda: not slurm_cluster.squeue("%A", extra=("-t", "PD,R")), WAIT_S,
                               "the array cancelled")
    finally:
        slurm_cluster.run("scontrol", "update", "PartitionName=hipri", "State=UP")
