"""Time scaling of a replay: slurm.conf parameters, limits rounded as Slurm rounds them, job requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from rltune_daemon.domain.jobs import Job
from rltune_daemon.errors import UserError
from rltune_daemon.policies.registry import DAEMON_DEFAULT
from rltune_daemon.replay.arms import parse_arm, parse_arms
from rltune_daemon.replay.collect import JobTimes, ctld_hints
from rltune_daemon.replay.scaling import (
    conf_overrides,
    job_request,
    limit_minutes,
    replay_limit,
)


def test_conf_overrides_divide_every_duration_by_the_speedup() -> None:
    c = conf_overrides(60)
    sched = dict(kv.partition("=")[::2] for kv in c["SchedulerParameters"].split(","))
    assert sched["bf_interval"] == "1"  # 30 s / 60 -> below Slurm's floor: 1 s
    assert sched["sched_interval"] == "1"  # 60 s / 60
    assert sched["bf_window"] == str(7 * 1440 // 60)  # a week of trace time, in minutes
    assert sched["batch_sched_delay"] == "0"
    assert "bf_continue" in sched
    assert c["PriorityMaxAge"] == "168"  # 7 days / 60 = 168 minutes
    assert c["PriorityDecayHalfLife"] == "168"
    assert c["PriorityCalcPeriod"] == "1"  # 5 minutes / 60 = 5 s: Slurm's floor is one minute
    assert c["PriorityWeightFairshare"] == "0"
    assert c["PriorityWeightTRES"] == ""  # removed from the template
    slow = conf_overrides(2)
    slow_sched = dict(kv.partition("=")[::2] for kv in slow["SchedulerParameters"].split(","))
    assert slow_sched["bf_interval"] == "15"
    assert slow["PriorityMaxAge"] == str(7 * 1440 // 2)


def test_calc_period_scales_until_its_floor() -> None:
    assert conf_overrides(2)["PriorityCalcPeriod"] == "3"  # 150 s -> whole minutes, rounded up
    assert conf_overrides(600)["PriorityCalcPeriod"] == "1"


@pytest.mark.parametrize("bad", [0.0, -5.0, 1e6, float("nan")])
def test_bad_speedup_is_a_user_error(bad: float) -> None:
    with pytest.raises(UserError, match="--speedup"):
        conf_overrides(bad)


def test_limits_round_up_to_whole_scaled_minutes() -> None:
    # 30 s at S=1 -> 1 minute; 61 s -> 2 minutes (Slurm rounds --time up, FACTS i)
    assert limit_minutes(30, 1) == 1
    assert limit_minutes(61, 1) == 2
    assert limit_minutes(3600, 60) == 1
    assert limit_minutes(3601, 60) == 2
    assert replay_limit(3601, 60) == 7200.0
    assert replay_limit(7200, 60) == 7200.0  # already whole: unchanged
    for limit in (1.0, 59.0, 3599.0, 12345.0, 86400.0):
        for s in (1.0, 60.0, 120.0, 600.0):
            r = replay_limit(limit, s)
            assert r >= limit and r - limit < 60 * s
            assert limit_minutes(r, s) == limit_minutes(limit, s)  # idempotent


def test_job_request_matches_the_trace_job() -> None:
    job = Job("tb-1", 0.0, 8, time_limit=7200.0, runtime=3000.0, gpu_types=("p100",), nodes=2)
    req = job_request(job, "rltr-s0-tb-1", "gpu", 60.0, 4)
    argv = req.argv()
    assert argv[argv.index("-N") + 1] == "2"
    assert "--gres=gpu:p100:4" in argv
    assert argv[argv.index("-t") + 1] == "2"
    assert argv[-1] == "sleep 50.000"
    any_type = job_request(Job("tb-2", 0.0, 1, time_limit=60.0, runtime=30.0), "n", "gpu", 60.0, 4)
    assert "--gres=gpu:1" in any_type.argv() and any_type.minutes == 1


def test_job_request_refuses_what_a_replay_cannot_express() -> None:
    with pytest.raises(UserError, match="GPU types"):
        job_request(Job("a", 0.0, 1, 60.0, runtime=30.0, gpu_types=("p100", "k80")), "n", "gpu", 60.0, 4)
    with pytest.raises(UserError, match="run time"):
        job_request(Job("b", 0.0, 1, 60.0), "n", "gpu", 60.0, 4)
    with pytest.raises(UserError, match="no node holds"):
        job_request(Job("c", 0.0, 8, 60.0, runtime=30.0), "n", "gpu", 60.0, 4)


def test_arm_specs() -> None:
    assert parse_arm("multifactor").kind == "multifactor"
    a = parse_arm("daemon:sjf/nohints")
    assert (a.kind, a.policy, a.hints, a.sim_spec) == ("daemon", "sjf", False, "daemon:sjf")
    r = parse_arm("rltune:models/testbed-multifactor")
    assert (r.kind, r.policy, r.hints) == ("rltune", "models/testbed-multifactor", True)
    assert r.reorder == "size-class"
    d = parse_arm("default")  # the daemon with no configuration
    assert (d.kind, d.policy, d.hints, d.reorder) == ("daemon", DAEMON_DEFAULT, True, "size-class")
    q = parse_arm("daemon:sjf/nohints/queue")  # every job reordered, no hints
    assert (q.policy, q.hints, q.reorder) == ("sjf", False, "queue")
    for bad in ("sjf", "daemon:nosuch", "rltune:", "daemon"):
        with pytest.raises(UserError):
            parse_arm(bad)
    with pytest.raises(UserError, match="twice"):
        parse_arms("multifactor,multifactor")


def test_hints_from_the_slurmctld_log(tmp_path: Path) -> None:
    log = tmp_path / "slurmctld.log"
    log.write_text(
        "[t] sched: _update_job: setting exc_nodes to p100-[1-2],k80-1 for JobId=7\n"
        "[t] sched: _update_job: setting exc_nodes to m40-1 for JobId=8\n"
        "[t] sched: _update_job: setting exc_nodes to p100-1 for JobId=99\n"  # not the replay's
        "[t] sched/backfill: _start_job: Started JobId=7 in gpu on m40-1\n"
        "[t] sched: _update_job: setting exc_nodes to  for JobId=8\n"  # cleared before it started
        "[t] sched: Allocate JobId=8 NodeList=k80-2 #CPUs=1 Partition=gpu\n")
    jobs = {"7": JobTimes("7"), "8": JobTimes("8"), "9": JobTimes("9")}
    assert ctld_hints(log, jobs) == 3
    assert jobs["7"].ever_excluded and jobs["7"].excluded == "p100-[1-2],k80-1"
    assert jobs["8"].ever_excluded and jobs["8"].excluded == ""
    assert not jobs["9"].ever_excluded


def test_daemon_arm_on_an_existing_cluster_steers_only_the_replay_users_jobs(tmp_path: Path) -> None:
    from rltune_daemon.replay.daemon_arm import scaled_config

    settings = {"speedup": 60.0, "origin": 0.0, "conf": "", "base_policy": "sjf", "model": "",
                "placement": True, "state_file": str(tmp_path / "s.json")}
    own = scaled_config(settings).planner_config()
    assert own.only_users == () and scaled_config(settings).slurm.partitions == ()  # its private cluster
    shared = scaled_config({**settings, "scope_user": "alice", "partition": "gpu"})
    assert shared.planner_config().only_users == ("alice",) and shared.slurm.partitions == ("gpu",)
