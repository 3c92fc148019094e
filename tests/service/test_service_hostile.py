"""Hostile text in every field a user (or an admin) can set, on a real Slurm 22.05: no value shifts another
field of the job the daemon sees, and a record that cannot be read whole is left out with a log line.

Each job carries crafted text (separators, newlines, a forged record, Slurm's own "none" words, a value
longer than the reader's width, control characters, multi-byte text) in ONE field, and a time limit of
its own. The truth is ``squeue --json`` (structured, so nothing can shift there); the daemon's reader
must agree with it on every job, and the daemon must rank the jobs by their real time limits.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import NullLog, config

from rltune_daemon.service.backends import SlurmBackend
from rltune_daemon.service.loop import Daemon
from rltune_daemon.service.metrics import Metrics
from rltune_daemon.service.statefile import StateFile
from slurm_fixtures import TEST_USER, SlurmTestCluster

pytestmark = pytest.mark.slurm

FORGED = "h|1|2026-01-01T00:00:00|9\n7|PENDING|x ✓"
HOSTILE = (
    FORGED,
    "|" * 40,
    "\n\n|\n",
    "(null)",
    "N/A",
    "tab\there\x01ctl\x7f",
    " lead and trail ",
    "Ω✓" * 10,
    "%A|%T|%64u|",
)
TOO_LONG = "a" * 70  # more than the reader's 64-byte account width: cannot be read whole
RESERVATION = "rsv|x\n1|PENDING|" + "✓"
FEATURES = "fa,fb"


def _sbatch_options(value: str, workdir: Path) -> dict[str, list[str]]:
    """One option per free-text field sbatch takes (the value goes in that field alone)."""
    return {
        "name": ["-J", value],
        "account": ["-A", value],
        "comment": ["--comment", value],
        "wckey": ["--wckey", value],
        "qos": ["--qos", value],
        "mail_user": ["--mail-user", value],
        "mcs_label": ["--mcs-label", value],
        "output": ["-o", f"/tmp/out-{value}"],
        "export": ["--export", f"ALL,RLTUNE_HOSTILE={value}"],
        "workdir": ["-D", str(workdir)],
    }


@pytest.fixture(scope="module")
def hostile(busy: SlurmTestCluster) -> Iterator[tuple[SlurmTestCluster, dict[str, dict[str, Any]]]]:
    """Every GPU busy; one pending job per (field, value), half of them owned by the test user."""
    c = busy
    c.scontrol("update", "NodeName=k80-1", f"AvailableFeatures={FEATURES}", f"ActiveFeatures={FEATURES}")
    c.run("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
    c.scontrol("create", "reservation", f"ReservationName={RESERVATION}", f"Users=root,{TEST_USER}",
               "Nodes=m40-1", "StartTime=now", "Duration=60", "Flags=IGNORE_JOBS")
    base = Path(tempfile.mkdtemp(prefix="rlt-hostile-", dir="/tmp"))
    os.chmod(base, 0o755)
    jobs: dict[str, dict[str, Any]] = {}
    minutes = 10
    for i, value in enumerate(HOSTILE):
        workdir = base / f"{i}-{value.replace('/', '_')}"
        workdir.mkdir()
        os.chmod(workdir, 0o777)
        for field, opts in _sbatch_options(value, workdir).items():
            minutes += 1
            user = TEST_USER if minutes % 2 else None
            job = c.submit(*opts, "--gres=gpu:1", "-t", str(minutes), user=user)
            jobs[job] = {"field": field, "value": value, "minutes": minutes, "user": user or "root"}
    # fields Slurm checks against what the admin configured: hostile text only as valid syntax
    for opts in (["--constraint", "fa|fb"], ["--reservation", RESERVATION],
                 ["--dependency", f"afterany:{next(iter(jobs))}?afterok:{next(iter(jobs))}"],
                 ["-p", "gpu,hipri"]):
        minutes += 1
        job = c.submit(*opts, "--gres=gpu:1", "-t", str(minutes))
        jobs[job] = {"field": opts[0], "value": opts[1], "minutes": minutes, "user": "root"}
    long_job = c.submit("-A", TOO_LONG, "--gres=gpu:1", "-t", "5")
    jobs[long_job] = {"field": "account", "value": TOO_LONG, "minutes": 5, "user": "root", "too_long": True}
    yield c, jobs
    c.cancel(*jobs)
    c.run("scontrol", "delete", f"ReservationName={RESERVATION}", check=False)
    c.scontrol("update", "NodeName=k80-1", "AvailableFeatures=", "ActiveFeatures=")
    shutil.rmtree(base, ignore_errors=True)


def test_fields_slurm_validates_refuse_hostile_text(busy: SlurmTestCluster) -> None:
    """Licenses, features, dependencies, unknown reservations and GRES types never reach the queue."""
    for opts, error in ((["-L", FORGED], "Invalid license"), (["--constraint", FORGED], "Invalid feature"),
                        (["--dependency", FORGED], "dependency"), (["--reservation", FORGED], "reservation"),
                        (["--gres", "gpu:p|x:1"], "node configuration"), (["-x", "p100-1|x"], "node name")):
        res = busy.run("sbatch", "-t", "5", *opts, "--wrap", "true", check=False)
        assert res.returncode != 0 and error.lower() in res.stderr.lower(), (opts, res.stderr)


def _none(text: str) -> str:
    """A free-text value as the reader can know it: trailing spaces are the field's padding, and the
    words squeue prints for "none" mean none, also when a user typed them as a value."""
    text = text.rstrip(" ")
    return "" if text in ("(null)", "N/A", "n/a", "None") else text


def _plain(value: Any) -> Any:
    """A ``squeue --json`` value as 22.05 prints it: from 23.02 the data parsers wrap numbers as
    ``{"set": true, "infinite": false, "number": N}``."""
    if isinstance(value, dict) and "number" in value:
        return float("inf") if value.get("infinite") else value["number"]
    return value


def _truth(c: SlurmTestCluster) -> dict[str, dict[str, Any]]:
    """Ground truth from ``squeue --json``: another code path in Slurm than the formats the reader uses."""
    data = json.loads(c.run("squeue", "--json").stdout)
    return {str(_plain(j["job_id"])): {k: _plain(v) for k, v in j.items()} for j in data["jobs"]}


def test_reader_sees_every_job_as_slurm_stores_it(hostile: tuple[SlurmTestCluster, dict[str, dict[str, Any]]]
                                                  ) -> None:
    c, jobs = hostile
    c.wait_in_sprio(*[j for j, meta in jobs.items() if meta["field"] != "--dependency"])
    reader = c.reader()
    snap = reader.read()
    info = reader.last
    assert info is not None
    truth = _truth(c)
    prio = c.sprio()
    seen = {j.id: (j, s) for j, s in zip(snap.pending, snap.pending_state, strict=True)}
    long_job = next(j for j, m in jobs.items() if m.get("too_long"))
    assert [j for j, _ in info.skipped] == [long_job] and info.unparsed == {long_job}
    assert "account is 64 bytes or longer" in info.skipped[0][1]
    for job_id, meta in jobs.items():
        if meta.get("too_long"):
            assert job_id not in seen
            continue
        job, st = seen[job_id]
        t = truth[job_id]
        what = f"job {job_id} ({meta['field']}={meta['value']!r})"
        assert job.time_limit == meta["minutes"] * 60 == t["time_limit"] * 60, what
        assert job.submit == t["submit_time"], what
        assert (job.gpus, job.gpu_types) == (1, ()), what
        assert job.user == t["user_name"] == meta["user"], what
        assert job.account == _none(t["account"]), what
        assert job.qos == _none(t["qos"]), what
        assert job.partition == t["partition"].split(",")[0], what
        assert st.priority == t["priority"], what
        if meta["field"] != "--dependency":  # sprio lists only jobs that may start (FACTS a)
            assert prio[job_id] == (st.priority, st.site_factor) and st.site_factor == 0, what
        if meta["field"] == "account" and meta["value"] == FORGED:
            assert job.account == FORGED.lower()  # Slurm stores accounts in lower case
    assert not {j.id for j in snap.pending} - set(jobs) - set(truth)  # nothing forged into existence


def test_daemon_ranks_hostile_jobs_by_their_real_values_and_logs_the_unreadable_one(
        hostile: tuple[SlurmTestCluster, dict[str, dict[str, Any]]], tmp_path: Path) -> None:
    c, jobs = hostile
    # every job reordered by its limit, across sizes and with none kept next in line: the order then
    # shows each job's real limit
    cfg = config(tmp_path, base_policy="sjf", slurm__conf=c.conf, planner__placement=False,
                 planner__reorder="queue", planner__next_in_line=0)
    log = NullLog()
    metrics = Metrics()
    d = Daemon(cfg, SlurmBackend(cfg), state_file=StateFile(cfg.resolved_state_file()), log=log,
               metrics=metrics)
    rep = d.cycle()
    assert rep.outcome == "applied" and not rep.errors and rep.unparsed == 1, rep
    long_job = next(j for j, m in jobs.items() if m.get("too_long"))
    (bad,) = log.named("record_not_parsed")
    assert bad["job"] == long_job and "account" in bad["reason"]
    assert metrics.registry.get_sample_value("rltune_errors_total", {"kind": "parse"}) == 1
    assert d.last_plan is not None
    planned = [e.job_id for e in d.last_plan.entries]
    # the multi-partition job may run in the higher PriorityTier (hipri), planned ahead of the rest
    eligible = [j for j in planned if jobs.get(j, {}).get("field") not in ("--dependency", "-p")]
    limits = [jobs[j]["minutes"] for j in eligible if j in jobs]
    assert limits == sorted(limits)  # shortest first, by the real limits: no forged value moved a job
    prio = c.sprio()
    order = sorted((j for j in eligible if j in prio), key=lambda j: -prio[j][0])
    assert order == [j for j in eligible if j in prio]  # and Slurm's order is that order
    assert long_job not in d.state.jobs and prio[long_job][1] == 0  # the unreadable job is left alone
    restore = d.restore()
    assert restore.ok, restore
    assert all(site == 0 for _, site in c.sprio().values())
    assert d.state.jobs == {}


ADMIN_QOS = ("q|9|2026-01-01T00:00:00", "q\n1|PENDING|", "q x", "q-ü✓")


def test_qos_names_an_admin_chose_stay_in_their_field(slurmdbd_cluster: SlurmTestCluster) -> None:
    """With accounting, QoS names are whatever the admin gave sacctmgr: '|', a newline, spaces, UTF-8."""
    c = slurmdbd_cluster
    c.cancel_all()
    names = ",".join(ADMIN_QOS)
    for q in ADMIN_QOS:
        c.run("sacctmgr", "-i", "add", "qos", q)
    c.run("sacctmgr", "-i", "modify", "user", "root", "set", f"qos+={names}")
    try:
        c.fill_gpus()
        jobs = {c.submit("--qos", q, "--gres=gpu:1", "-t", str(20 + k)): q for k, q in enumerate(ADMIN_QOS)}
        c.wait_in_sprio(*jobs)
        snap = c.reader().read()
        seen = {j.id: j for j in snap.pending}
        truth = _truth(c)
        for job_id, q in jobs.items():
            assert seen[job_id].qos == truth[job_id]["qos"] and truth[job_id]["qos"].lower() == q.lower()
            assert seen[job_id].time_limit == truth[job_id]["time_limit"] * 60
            assert seen[job_id].submit == truth[job_id]["submit_time"]
    finally:
        c.cancel_all()
        c.run("sacctmgr", "-i", "modify", "user", "root", "set", f"qos-={names}", check=False)
        for q in ADMIN_QOS:
            c.run("sacctmgr", "-i", "delete", "qos", q, check=False)
