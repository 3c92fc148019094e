"""Runner: argv only, timeouts, environment, call budget, error classification (fake programs)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fakebin import FakeBin

from rltune_daemon.errors import UserError
from rltune_daemon.slurm.errors import (
    CallBudgetExceeded,
    CommandTimeout,
    ControllerDown,
    PermissionDenied,
    SlurmCommandError,
    SlurmError,
)
from rltune_daemon.slurm.runner import SlurmRunner, classify, slurm_env


@pytest.fixture
def fake(tmp_path: Path) -> FakeBin:
    return FakeBin(tmp_path / "bin")


def test_runs_argv_and_returns_output(fake: FakeBin) -> None:
    fake.add("squeue", stdout="1|x\n")
    r = SlurmRunner(bin_dir=str(fake.path))
    res = r.run(["squeue", "-h", "-o", "%i|%T; rm -rf /"])
    assert res.rc == 0 and res.stdout == "1|x\n"
    assert fake.calls() == ["squeue -h -o %i|%T; rm -rf /"]  # one argv element, no shell
    assert r.calls_this_cycle == 1 and r.stats.calls["squeue"] == 1


def test_environment_is_sanitised() -> None:
    env = slurm_env({"PATH": "/bin", "SQUEUE_FORMAT": "%i", "SINFO_SORT": "x", "SLURM_CLUSTERS": "other",
                     "SLURM_TIME_FORMAT": "relative", "SPRIO_FORMAT": "%i", "HOME": "/root"}, "/etc/x.conf")
    assert env == {"PATH": "/bin", "HOME": "/root", "SLURM_TIME_FORMAT": "standard",
                   "SLURM_CONF": "/etc/x.conf"}
    assert slurm_env({"SLURM_CONF": "/a.conf"})["SLURM_CONF"] == "/a.conf"  # passthrough


def test_slurm_conf_reaches_the_command(fake: FakeBin, tmp_path: Path) -> None:
    script = fake.path / "sinfo"
    script.write_text('#!/bin/bash\necho "$SLURM_CONF|$SLURM_TIME_FORMAT|${SQUEUE_FORMAT:-unset}"\n')
    script.chmod(0o755)
    r = SlurmRunner(bin_dir=str(fake.path), slurm_conf="/x/slurm.conf",
                    env={"PATH": "/usr/bin:/bin", "SQUEUE_FORMAT": "%i"})
    assert r.run(["sinfo"]).stdout.strip() == "/x/slurm.conf|standard|unset"


def test_timeout_kills_and_raises(fake: FakeBin) -> None:
    fake.add("squeue", sleep=30)
    r = SlurmRunner(bin_dir=str(fake.path), timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"within 0\.5 s"):
        r.run(["squeue"])
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize(
    ("stderr", "stdout", "rc", "exc"),
    [
        ("slurm_load_jobs error: Unable to contact slurm controller (connect failure)", "", 1,
         ControllerDown),
        ("slurm_load_jobs error: Socket timed out on send/recv operation", "", 1, ControllerDown),
        ("Couldn't get priority factors from controller: Unable to contact slurm controller", "", 255,
         ControllerDown),
        ("", "Slurmctld(primary) at vm is DOWN\n", 1, ControllerDown),
        ("Access/permission denied for job 1035", "", 1, PermissionDenied),
        ("Invalid user id for job 1034", "", 1, PermissionDenied),
        ("squeue: error: Invalid job format specification: ExcNodes", "", 1, SlurmCommandError),
        ("", "", 2, SlurmCommandError),
    ],
)
def test_classify(stderr: str, stdout: str, rc: int, exc: type[SlurmError]) -> None:
    with pytest.raises(exc) as info:
        classify(["squeue", "-h"], rc, stdout, stderr)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, UserError)


def test_rc_zero_is_never_an_error() -> None:
    classify(["squeue"], 0, "", "Unable to contact slurm controller")  # --json prints errors with rc 0


def test_captured_down_outputs_classify(captured: Path) -> None:
    with pytest.raises(ControllerDown):
        classify(["squeue"], 1, "", (captured / "squeue_down.stderr").read_text())
    with pytest.raises(PermissionDenied):
        classify(["scontrol"], 1, "", (captured / "scontrol_denied.stderr").read_text())


def test_missing_program_is_a_clear_error(tmp_path: Path) -> None:
    r = SlurmRunner(bin_dir=str(tmp_path))
    with pytest.raises(SlurmCommandError, match=r"command not found.*slurm-client"):
        r.run(["squeue"])


def test_call_budget(fake: FakeBin) -> None:
    fake.add("sinfo")
    r = SlurmRunner(bin_dir=str(fake.path), max_calls_per_cycle=2)
    r.run(["sinfo"])
    r.run(["sinfo"])
    with pytest.raises(CallBudgetExceeded):
        r.run(["sinfo"])
    r.begin_cycle()
    r.run(["sinfo"])


def test_ping(fake: FakeBin, captured: Path) -> None:
    fake.add("scontrol", stdout=(captured / "ping_up.txt").read_text())
    assert SlurmRunner(bin_dir=str(fake.path)).ping()
    fake.add("scontrol", stdout=(captured / "ping_down.txt").read_text(), rc=1)
    r = SlurmRunner(bin_dir=str(fake.path))
    assert not r.ping()
    with pytest.raises(ControllerDown):
        r.require_up()


def test_ping_of_a_hung_controller_is_bounded(fake: FakeBin) -> None:
    fake.add("scontrol", sleep=30)
    r = SlurmRunner(bin_dir=str(fake.path), ping_timeout=0.3)
    t0 = time.monotonic()
    assert not r.ping()
    assert time.monotonic() - t0 < 5


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="positive"):
        SlurmRunner(timeout=0)
    with pytest.raises(ValueError, match="argv"):
        SlurmRunner().run([])
    with pytest.raises(ValueError, match="argv"):
        SlurmRunner().run(["squeue", "a\0b"])
