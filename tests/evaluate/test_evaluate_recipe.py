"""rltune evaluate --recipe: a published run repeats with the settings it recorded, whatever today's
defaults are, and the comparison says which policy's numbers moved."""

from __future__ import annotations

import json
import math
import shlex
import shutil
from pathlib import Path

import pytest

from rltune_daemon.cli.evaluate_cmd import eval_config
from rltune_daemon.cli.main import build_parser, main
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate.recipe import differences, explicit_command, recipe_config
from rltune_daemon.evaluate.recorded import AS_RUN_BEFORE
from rltune_daemon.evaluate.runner import EvalConfig
from rltune_daemon.planner.config import STARVATION_REFERENCE_DEFAULT, STARVATION_STRETCH_DEFAULT
from rltune_daemon.policies.learned import actor_sha256

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "philly-qssf"

# A small run under settings that are not today's defaults, as most published runs now are.
OLD_SETTINGS = ["--starvation-stretch", "0", "--starvation-reference", "priority", "--react", "0"]
SMALL = ["--trace", "testbed", "--opt", "jobs=2000", "--windows", "2", "--window-size", "100",
         "--policies", "fcfs,daemon:sjf", "--jobs", "1"]


def _strip(results_json: Path, keys: tuple[str, ...]) -> None:
    """Make ``results_json`` look as if written before ``keys`` were recorded."""
    res = json.loads(results_json.read_text())
    for key in keys:
        del res["config"][key]
    results_json.write_text(json.dumps(res))


def test_a_run_made_before_settings_were_recorded_repeats_as_it_ran(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert STARVATION_STRETCH_DEFAULT != 0 and STARVATION_REFERENCE_DEFAULT != "priority"  # else moot
    first = tmp_path / "first"
    assert main(["evaluate", *SMALL, *OLD_SETTINGS, "--out", str(first)]) == 0
    _strip(first / "results.json", ("starvation_stretch", "starvation_reference", "bf_reservations"))
    cfg, notes = recipe_config(first)
    assert (cfg.starvation_stretch, cfg.starvation_reference, cfg.bf_reservations, cfg.react) == \
        (AS_RUN_BEFORE["starvation_stretch"], "priority", 1, 0.0)
    assert notes == []
    capsys.readouterr()
    again = tmp_path / "again"
    assert main(["evaluate", "--recipe", str(first), "--jobs", "1", "--out", str(again)]) == 0
    out = capsys.readouterr().out
    assert f"same numbers as {first}: 2 policies x 2 windows" in out
    # the repeat records a command that names every setting: typed again, it is the same evaluation
    command = json.loads((again / "results.json").read_text())["config"]["command"]
    for flag in ("--starvation-stretch 0", "--starvation-reference priority", "--react 0",
                 "--bf-reservations 1", "--interval 60"):
        assert flag in command
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert eval_config(args) == cfg  # jobs (workers) is not a setting: 0 in both


def test_a_changed_number_names_the_policy_and_how_many_windows(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    first = tmp_path / "first"
    assert main(["evaluate", *SMALL, "--out", str(first)]) == 0
    res = json.loads((first / "results.json").read_text())
    res["policies"]["daemon:sjf"]["per_window"][1]["wait_mean"] *= 1.5
    (first / "results.json").write_text(json.dumps(res))
    capsys.readouterr()
    assert main(["evaluate", "--recipe", str(first), "--jobs", "1", "--out", str(first)]) == 0
    out = capsys.readouterr().out
    assert f"differs from {first}:" in out
    line = next(x for x in out.splitlines() if "`daemon:sjf`" in x and "windows differ" in x)
    assert "(1 of 2 windows differ; largest relative difference 0.33 in wait_mean)" in line
    assert not any("`fcfs`" in x and "windows differ" in x for x in out.splitlines())
    # --out may be the run's own directory: it now holds the repeat, with its explicit command
    again = json.loads((first / "results.json").read_text())
    assert again["config"]["command"].startswith("rltune evaluate --trace testbed")
    assert differences(again, again) == []


def test_differences_ignore_metrics_an_older_file_lacks() -> None:
    window = {"window": 0, "bsld": 2.0, "wait_mean": 10.0, "wait_median": 3.0}
    now = {"policies": {"sjf": {"bsld": 2.0, "wait_mean": 10.0, "per_window": [window]}}}
    old = {"policies": {"sjf": {"bsld": 2.0, "wait_mean": 10.0,
                                "per_window": [{k: v for k, v in window.items() if k != "wait_median"}]}}}
    assert differences(old, now) == []
    assert differences({"policies": {}}, now) == ["`sjf`: not in the recorded run"]
    old["policies"]["sjf"]["per_window"] = []
    assert "a window the run did not have" in differences(old, now)[0]


def _results(tmp_path: Path, spec: str, models: dict[str, object]) -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True)
    config = {"trace": "philly", "policies": [spec], "windows": 10, "window_size": 1024, "seed": 0,
              "estimates": "user", "mode": "daemon", "cluster": None, "opts": {}, "jobs": 0, "pure": False,
              "interval": 60.0, "react": 5.0, "starvation_seconds": "off", "starvation_slots": 0,
              "milp": True, "split": "train", "models": models}
    (run / "results.json").write_text(json.dumps({"config": config, "policies": {}}))
    return run


def test_a_model_retrained_since_the_run_is_named(tmp_path: Path) -> None:
    spec = f"rltune:{SHIPPED}"
    now = actor_sha256(SHIPPED)
    cfg, notes = recipe_config(_results(tmp_path / "a", spec, {spec: {"actor_sha256": now}}))
    assert notes == [] and math.isinf(cfg.starvation_seconds) and cfg.split == "train"
    _, notes = recipe_config(_results(tmp_path / "b", spec, {spec: {"actor_sha256": "0123456789abcdef"}}))
    assert len(notes) == 1 and f"now holds actor {now}, the run used actor 0123456789abcdef" in notes[0]
    _, notes = recipe_config(_results(tmp_path / "c", spec, {}))
    assert notes == [f"{spec}: the run predates recording its model; its rows are this model's"]
    gone = f"rltune:{tmp_path / 'nothing'}"
    _, notes = recipe_config(_results(tmp_path / "d", gone, {gone: {"actor_sha256": now}}))
    assert "now holds no model" in notes[0]


def test_a_run_of_daemon_multifactor_before_it_left_slurms_order_is_noted(tmp_path: Path) -> None:
    """Runs recorded before 2026-11-25 had ``daemon:multifactor`` write the planner's SiteFactors, which
    differ from none only where the guard lifted a job: when it also measured submit order."""
    def config(run: Path, **settings: object) -> Path:
        res = json.loads((run / "results.json").read_text())
        res["config"].update(settings)
        (run / "results.json").write_text(json.dumps(res))
        return run

    run = config(_results(tmp_path / "old", "daemon:multifactor", {}), starvation_reference="both",
                 starvation_seconds=14400.0)
    _, notes = recipe_config(run)
    assert len(notes) == 1
    assert notes[0].startswith("daemon:multifactor: the run wrote the planner's SiteFactors")
    assert recipe_config(config(run, daemon_multifactor="slurm-order"))[1] == []  # what a run records now
    assert recipe_config(_results(tmp_path / "off", "daemon:multifactor", {}))[1] == []  # guard off
    before = config(_results(tmp_path / "priority", "daemon:multifactor", {}), starvation_seconds=14400.0)
    assert recipe_config(before)[1] == []  # measured against Slurm's own order only: nothing lifted
    assert recipe_config(config(_results(tmp_path / "sjf", "daemon:sjf", {}), starvation_reference="both",
                                starvation_seconds=14400.0))[1] == []


def test_a_model_moved_elsewhere_repeats_its_run_from_there(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A replaced model restored into another directory (``--model RECORDED=DIR``) repeats the rows it
    made, compared under their recorded name; a directory with another actor is refused."""
    then = tmp_path / "models" / "m"
    shutil.copytree(SHIPPED, then)
    first = tmp_path / "first"
    assert main(["evaluate", "--trace", "testbed", "--opt", "jobs=2000", "--windows", "1", "--window-size",
                 "100", "--policies", f"sjf,rltune:{then}", "--jobs", "1", "--out", str(first)]) == 0
    restored = tmp_path / "restored"
    then.rename(restored)
    capsys.readouterr()
    assert main(["evaluate", "--recipe", str(first), "--jobs", "1"]) != 0  # the model is gone
    assert f"rltune:{then}: {then} now holds no model" in capsys.readouterr().err
    assert main(["evaluate", "--recipe", str(first), "--jobs", "1", "--model", f"{then}={restored}"]) == 0
    assert f"same numbers as {first}: 2 policies x 1 windows" in capsys.readouterr().out
    res = json.loads((first / "results.json").read_text())
    res["policies"][f"rltune:{then}"]["per_window"][0]["bsld"] += 1.0
    (first / "results.json").write_text(json.dumps(res))
    assert main(["evaluate", "--recipe", str(first), "--jobs", "1", "--model", f"{then}={restored}"]) == 0
    assert f"  `rltune:{then}`: BSLD" in capsys.readouterr().out  # the recorded name, not the copy's
    other = tmp_path / "other"
    shutil.copytree(restored, other)
    (other / "actor.pt").write_bytes((other / "actor.pt").read_bytes() + b"\0")
    for argv, message in ((["--model", f"{then}={other}"], "that directory holds actor"),
                          (["--model", f"elsewhere={restored}"],
                           f"has no policy rltune:elsewhere (its models: {then})"),
                          (["--model", "no-equals-sign"], "expected RECORDED=DIR")):
        assert main(["evaluate", "--recipe", str(first), *argv]) != 0
        assert message in capsys.readouterr().err


def test_explicit_commands_mean_their_config(tmp_path: Path) -> None:
    for cfg in (EvalConfig(trace="philly", policies=("sjf", "rltune:models/x y")),
                EvalConfig(trace="t.csv", policies=("fcfs",), cluster="c.csv", opts={"jobs": "5"},
                           estimates="oracle", mode="event", pure=True, milp=False, split="train-tail",
                           starvation_seconds=math.inf, starvation_slots=2, starvation_stretch=0.5,
                           starvation_reference="submit", interval=1234567.5, react=0.1, bf_reservations=7,
                           windows=3, window_size=50, seed=4)):
        args = build_parser().parse_args(shlex.split(explicit_command(cfg, tmp_path))[1:])
        assert eval_config(args) == cfg
        assert args.out == tmp_path


def test_recipe_refuses_settings_and_bad_directories(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text("{not json")
    cases = [
        (["--recipe", str(tmp_path), "--windows", "3", "--seed", "1"],
         "--seed, --windows: --recipe takes every setting from the run's results.json; drop them"),
        (["--recipe", str(tmp_path / "none")], "no results.json there"),
        (["--recipe", str(bad)], "cannot read results.json"),
        ([], "--trace is required (or --recipe DIR to repeat a published run)"),
    ]
    for argv, message in cases:
        assert main(["evaluate", *argv]) != 0
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    (bad / "results.json").write_text(json.dumps({"config": {"trace": "philly"}, "policies": {}}))
    with pytest.raises(UserError, match="lacks a setting this version needs"):
        recipe_config(bad)
