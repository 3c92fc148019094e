"""Writer: validation before sending, only changed values, ordering, stderr-to-job mapping."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakebin import FakeBin
from hypothesis import given
from hypothesis import strategies as st

from rltune_daemon.domain import Snapshot
from rltune_daemon.domain.updates import JobUpdate, ReadInfo, UpdateStatus
from rltune_daemon.slurm.errors import ControllerDown, InvalidUpdate
from rltune_daemon.slurm.runner import SlurmRunner
from rltune_daemon.slurm.writer import SITE_FACTOR_LIMIT, SlurmWriter, map_results, prepare

S = UpdateStatus


@pytest.fixture
def snap(captured_snapshot: tuple[Snapshot, ReadInfo]) -> Snapshot:
    return captured_snapshot[0]


def _lines(snap: Snapshot, *updates: JobUpdate) -> list[str]:
    return [ln for _, ln in prepare(snap, updates).lines]


def _status(snap: Snapshot, u: JobUpdate) -> tuple[UpdateStatus, str]:
    d = prepare(snap, [u]).decided
    return (d[0].status, d[0].reason) if d else (S.PLANNED, "")


# ---- building lines --------------------------------------------------------------------------


def test_site_factor_line_and_unchanged(snap: Snapshot, meta: dict[str, str]) -> None:
    typed, site = meta["pd_typed"], meta["pd_site"]
    assert _lines(snap, JobUpdate(typed, site_factor=100)) == [f"update JobId={typed} SiteFactor=100"]
    assert _status(snap, JobUpdate(site, site_factor=500)) == (S.UNCHANGED, "")  # already 500 in sprio
    assert _lines(snap, JobUpdate(site, site_factor=0)) == [f"update JobId={site} SiteFactor=0"]
    assert _lines(snap, JobUpdate(typed, site_factor=-SITE_FACTOR_LIMIT))[0].endswith("=-2147483645")


def test_node_lists_set_clear_and_compare_as_sets(snap: Snapshot, meta: dict[str, str]) -> None:
    j = meta["pd_nodes"]  # ReqNodeList=p100-2 ExcNodeList=k80-[1-2]
    same = JobUpdate(j, req_nodes=("p100-2",), exc_nodes=("k80-2", "k80-1"))
    assert _status(snap, same)[0] is S.UNCHANGED
    assert _lines(snap, JobUpdate(j, req_nodes=(), exc_nodes=())) == [
        f"update JobId={j} ExcNodeList= ReqNodeList="
    ]
    assert _lines(snap, JobUpdate(j, req_nodes=("p100-1", "p100-2"), exc_nodes=())) == [
        f"update JobId={j} ReqNodeList=p100-[1-2] ExcNodeList="
    ]
    t = meta["pd_typed"]
    assert _lines(snap, JobUpdate(t, site_factor=5, exc_nodes=("m40-1",), oversubscribe=False)) == [
        f"update JobId={t} SiteFactor=5 OverSubscribe=no ExcNodeList=m40-1"
    ]


def test_oversubscribe_only_when_changed(snap: Snapshot, meta: dict[str, str]) -> None:
    assert _status(snap, JobUpdate(meta["pd_ovs"], oversubscribe=True))[0] is S.UNCHANGED  # already YES
    assert _lines(snap, JobUpdate(meta["pd_ovs"], oversubscribe=False))[0].endswith("OverSubscribe=no")
    assert _lines(snap, JobUpdate(meta["pd_typed"], oversubscribe=True))[0].endswith("OverSubscribe=yes")


def test_unknown_site_factor_is_always_written(snap: Snapshot, meta: dict[str, str]) -> None:
    j = meta["pd_typed"]
    assert prepare(snap, [JobUpdate(j, site_factor=0)]).lines == ()
    forced = prepare(snap, [JobUpdate(j, site_factor=0)], site_factor_unknown={j})
    assert forced.lines == ((j, f"update JobId={j} SiteFactor=0"),)


def test_whole_array_first_then_split_task(snap: Snapshot, meta: dict[str, str]) -> None:
    arr, split = meta["pd_array"], meta["pd_array_split"]
    lines = _lines(snap, JobUpdate(split, site_factor=50), JobUpdate(meta["pd_typed"], site_factor=9),
                   JobUpdate(arr, site_factor=20))
    assert lines[0] == f"update JobId={arr} SiteFactor=20"  # JobId=<array> also rewrites split tasks
    assert lines.index(f"update JobId={split} SiteFactor=50") > 0


# ---- refusals (per job, nothing sent for them) -----------------------------------------------------


def test_refusals(snap: Snapshot, meta: dict[str, str]) -> None:
    assert _status(snap, JobUpdate(meta["run_p100x4"], site_factor=1)) == (S.REFUSED, "running")
    assert _status(snap, JobUpdate("424242", site_factor=1)) == (S.REFUSED, "not pending in the snapshot")
    assert _status(snap, JobUpdate(meta["pd_held"], site_factor=1)) == (S.REFUSED, "held: never touched")
    assert _status(snap, JobUpdate(meta["pd_admin"], site_factor=1))[0] is S.REFUSED
    assert _status(snap, JobUpdate(meta["pd_admin"], site_factor=0, exc_nodes=()))[0] is S.REFUSED
    # undoing our own SiteFactor stays possible; sprio shows 0 there whatever is stored, so it is sent
    assert _lines(snap, JobUpdate(meta["pd_admin"], site_factor=0)) == [
        f"update JobId={meta['pd_admin']} SiteFactor=0"]
    arr = _status(snap, JobUpdate(meta["pd_array"], req_nodes=("p100-1",)))
    assert arr[0] is S.REFUSED and "array" in arr[1]
    assert _status(snap, JobUpdate(meta["pd_array_split"], req_nodes=("p100-1",)))[0] is S.PLANNED


# ---- validation (raises, nothing sent at all) ----------------------------------------------------


@pytest.mark.parametrize(
    "update",
    [
        JobUpdate("6", site_factor=SITE_FACTOR_LIMIT + 1),
        JobUpdate("6", site_factor=-SITE_FACTOR_LIMIT - 1),
        JobUpdate("6", site_factor=True),
        JobUpdate("6", site_factor=1.5),  # type: ignore[arg-type]
        JobUpdate("6", site_factor="500"),  # type: ignore[arg-type]
        JobUpdate("6", req_nodes=("nosuchnode",)),
        JobUpdate("6", exc_nodes=("p100-1", "p100-9")),
        JobUpdate("6", req_nodes="p100-1"),  # type: ignore[arg-type]
        JobUpdate("6", req_nodes=("p100-1 Priority=0",)),
        JobUpdate("6", oversubscribe="yes"),  # type: ignore[arg-type]
        JobUpdate("6_1", site_factor=1),
        JobUpdate("6 Priority=0", site_factor=1),
        JobUpdate("6\nupdate JobId=7 Priority=0", site_factor=1),
        JobUpdate("0", site_factor=1),
        JobUpdate("", site_factor=1),
    ],
)
def test_invalid_updates_raise_before_sending(snap: Snapshot, update: JobUpdate, tmp_path: Path) -> None:
    fake = FakeBin(tmp_path)
    fake.add("scontrol", stdout="Slurmctld(primary) at vm is UP\n")
    writer = SlurmWriter(SlurmRunner(bin_dir=str(fake.path)))
    with pytest.raises(InvalidUpdate) as info:
        writer.apply(snap, [JobUpdate("7", site_factor=1), update])
    assert "\n" not in str(info.value)
    assert fake.calls() == []


def test_duplicate_job_in_batch(snap: Snapshot) -> None:
    with pytest.raises(InvalidUpdate, match="more than one"):
        prepare(snap, [JobUpdate("7", site_factor=1), JobUpdate("7", site_factor=2)])


def test_there_is_no_priority_field() -> None:
    with pytest.raises(TypeError):
        JobUpdate("7", priority=5)  # type: ignore[call-arg]


@given(
    sf=st.one_of(st.none(), st.integers(-SITE_FACTOR_LIMIT, SITE_FACTOR_LIMIT)),
    req=st.one_of(st.none(), st.lists(st.sampled_from(["p100-1", "p100-2", "k80-1", "k80-2", "m40-1"]),
                                      max_size=3).map(tuple)),
    ovs=st.one_of(st.none(), st.booleans()),
)
def test_no_line_ever_sets_priority(
    captured_snapshot: tuple[Snapshot, ReadInfo],
    sf: int | None,
    req: tuple[str, ...] | None,
    ovs: bool | None,
) -> None:
    snap = captured_snapshot[0]
    ids = [j.id for j in snap.pending]
    for _, line in prepare(snap, [JobUpdate(i, site_factor=sf, req_nodes=req, oversubscribe=ovs)
                                  for i in ids if i != "13"]).lines:
        assert " Priority=" not in line and "\n" not in line
        assert line.startswith("update JobId=")


# ---- mapping scontrol's answer ---------------------------------------------------------------


def _batch(captured: Path) -> list[tuple[str, str]]:
    text = (captured / "scontrol_batch.stdin").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("update")]
    return [(ln.split()[1].split("=")[1], ln) for ln in lines]


def test_map_captured_batch(captured: Path, meta: dict[str, str]) -> None:
    rc = int((captured / "scontrol_batch.rc").read_text())
    stderr = (captured / "scontrol_batch.stderr").read_text()
    res = {r.job_id: r for r in map_results(_batch(captured), rc, stderr)}
    assert res[meta["run_p100x4"]].status is S.FAILED
    assert res[meta["run_p100x4"]].reason == "Job is no longer pending execution"
    assert res["999999"].status is S.FAILED
    assert res[meta["pd_typed"]].reason == "Invalid node name specified"
    assert res[meta["pd_site"]].status is S.APPLIED and res[meta["pd_untyped"]].status is S.APPLIED


def test_map_controller_trouble_is_unknown() -> None:
    lines = [("5", "update JobId=5 SiteFactor=1"), ("6", "update JobId=6 SiteFactor=1")]
    res = map_results(lines, 1, "Unexpected message received for job 5\n")
    assert [r.status for r in res] == [S.UNKNOWN, S.APPLIED]
    res = map_results(lines, 1, "slurm_update error: Socket timed out on send/recv operation\n")
    assert {r.status for r in res} == {S.UNKNOWN}
    res = map_results(lines, 1, "scontrol: error: something without a job id\n")
    assert {r.status for r in res} == {S.UNKNOWN}
    assert {r.status for r in map_results(lines, 1, "")} == {S.UNKNOWN}
    assert {r.status for r in map_results(lines, None, "", timed_out=True)} == {S.UNKNOWN}
    assert {r.status for r in map_results(lines, 0, "")} == {S.APPLIED}


def test_map_permission_denied_per_job(captured: Path, meta: dict[str, str]) -> None:
    j = meta["pd_user"]
    res = map_results([(j, f"update JobId={j} SiteFactor=1")], 1,
                      (captured / "scontrol_denied.stderr").read_text())
    assert res[0].status is S.FAILED and res[0].reason == "Access/permission denied"


# ---- the writer end to end with a fake scontrol ----------------------------------------------------


def _scontrol(fake: FakeBin, *, stderr: str = "", rc: int = 0, sleep: float = 0.0, up: bool = True) -> None:
    ping = (f"Slurmctld(primary) at vm is {'UP' if up else 'DOWN'}\n", 0 if up else 1)
    fake.add("scontrol", stderr=stderr, rc=rc, sleep=sleep, by_arg={"ping": ping})


def test_apply_sends_one_batch_via_stdin(snap: Snapshot, meta: dict[str, str], tmp_path: Path) -> None:
    fake = FakeBin(tmp_path)
    _scontrol(fake, stderr=f"Job is no longer pending execution for job {meta['pd_typed']}\n", rc=1)
    writer = SlurmWriter(SlurmRunner(bin_dir=str(fake.path)))
    res = writer.apply(snap, [JobUpdate(meta["pd_typed"], oversubscribe=True),
                              JobUpdate(meta["pd_untyped"], site_factor=7),
                              JobUpdate(meta["pd_site"], site_factor=500),
                              JobUpdate(meta["run_p100x4"], site_factor=1)])
    assert fake.calls() == ["scontrol ping", "scontrol "]
    stdin = fake.stdin_of("scontrol")
    assert stdin.endswith("quit\n") and stdin.count("update JobId=") == 2
    assert res.failed == (meta["pd_typed"],) and res.applied == (meta["pd_untyped"],)
    assert res.by_job()[meta["pd_site"]].status is S.UNCHANGED
    assert res.refused == (meta["run_p100x4"],) and res.rc == 1


def test_apply_nothing_to_do_sends_nothing(snap: Snapshot, meta: dict[str, str], tmp_path: Path) -> None:
    fake = FakeBin(tmp_path)
    _scontrol(fake)
    writer = SlurmWriter(SlurmRunner(bin_dir=str(fake.path)))
    res = writer.apply(snap, [JobUpdate(meta["pd_site"], site_factor=500)])
    assert fake.calls() == [] and res.results[0].status is S.UNCHANGED


def test_dry_run_sends_nothing(snap: Snapshot, meta: dict[str, str], tmp_path: Path) -> None:
    fake = FakeBin(tmp_path)
    _scontrol(fake)
    res = SlurmWriter(SlurmRunner(bin_dir=str(fake.path))).apply(
        snap, [JobUpdate(meta["pd_typed"], site_factor=3)], dry_run=True)
    assert fake.calls() == [] and res.dry_run
    assert res.lines == (f"update JobId={meta['pd_typed']} SiteFactor=3",)


def test_controller_down_raises_before_writing(snap: Snapshot, meta: dict[str, str], tmp_path: Path) -> None:
    fake = FakeBin(tmp_path)
    _scontrol(fake, up=False, rc=1)
    writer = SlurmWriter(SlurmRunner(bin_dir=str(fake.path)))
    with pytest.raises(ControllerDown):
        writer.apply(snap, [JobUpdate(meta["pd_typed"], site_factor=3)])
    assert fake.calls() == ["scontrol ping"]


def test_a_read_just_answered_stands_for_the_ping(snap: Snapshot, meta: dict[str, str],
                                                  tmp_path: Path) -> None:
    """The cycle's own read reached slurmctld a moment ago: writing needs no second ping; a read that
    failed, or an older one, does not count."""
    fake = FakeBin(tmp_path)
    _scontrol(fake)
    fake.add("squeue", stdout="")
    runner = SlurmRunner(bin_dir=str(fake.path))
    runner.run(["squeue"])
    SlurmWriter(runner).apply(snap, [JobUpdate(meta["pd_typed"], site_factor=3)])
    assert fake.calls() == ["squeue ", "scontrol "]
    SlurmWriter(runner, fresh=0.0).apply(snap, [JobUpdate(meta["pd_untyped"], site_factor=4)])
    assert fake.calls()[2:] == ["scontrol ping", "scontrol "]
    fake.add("sinfo", rc=1, stderr="slurm_load_partitions: Unable to contact slurm controller\n")
    runner.answered_at = None
    runner.run(["sinfo"], check=False)
    SlurmWriter(runner).apply(snap, [JobUpdate(meta["pd_untyped"], site_factor=5)])
    assert fake.calls()[4:] == ["sinfo ", "scontrol ping", "scontrol "]


def test_timeout_is_unknown(snap: Snapshot, meta: dict[str, str], tmp_path: Path) -> None:
    fake = FakeBin(tmp_path)
    _scontrol(fake, sleep=30)
    writer = SlurmWriter(SlurmRunner(bin_dir=str(fake.path)), ping_first=False, timeout_base=0.3)
    res = writer.apply(snap, [JobUpdate(meta["pd_typed"], site_factor=3)])
    assert res.unknown == (meta["pd_typed"],) and res.rc is None


# ---- batches, pace, stop --------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


def _five(meta: dict[str, str]) -> list[JobUpdate]:
    jobs = ("pd_typed", "pd_untyped", "pd_gpus_per_job", "pd_notime", "pd_nice")
    return [JobUpdate(meta[k], site_factor=10 + i) for i, k in enumerate(jobs)]


def _paced(tmp_path: Path, rate: float) -> tuple[FakeBin, _Clock, SlurmWriter]:
    """A writer sending batches of 2 lines at ``rate`` lines/s to a fake scontrol, on a fake clock."""
    fake = FakeBin(tmp_path)
    _scontrol(fake)
    clock = _Clock()
    writer = SlurmWriter(SlurmRunner(bin_dir=str(fake.path)), batch=2, rate=rate, clock=clock,
                         sleep=clock.sleep)
    return fake, clock, writer


def test_batches_of_write_batch_lines_paced_at_write_rate(snap: Snapshot, meta: dict[str, str],
                                                          tmp_path: Path) -> None:
    fake, clock, writer = _paced(tmp_path, 4.0)
    res = writer.apply(snap, _five(meta))
    assert [c for c in fake.calls() if c != "scontrol ping"] == ["scontrol "] * 3  # 2 + 2 + 1 lines
    assert len(res.applied) == 5
    assert clock.t == pytest.approx(1.0)  # 4 lines sent before the last batch, at 4 lines/s


def test_a_stop_between_batches_leaves_the_rest_unsent(snap: Snapshot, meta: dict[str, str],
                                                       tmp_path: Path) -> None:
    _, clock, writer = _paced(tmp_path, 1.0)
    res = writer.apply(snap, _five(meta), should_stop=lambda: clock.t > 0.5)
    assert len(res.applied) == 2 and len(res.refused) == 3
    assert all("not sent" in r.reason for r in res.results if r.status is S.REFUSED)


def test_a_timed_out_batch_stops_the_batches_after_it(snap: Snapshot, meta: dict[str, str],
                                                      tmp_path: Path) -> None:
    fake = FakeBin(tmp_path)
    _scontrol(fake, sleep=30)
    writer = SlurmWriter(SlurmRunner(bin_dir=str(fake.path)), ping_first=False, timeout_base=0.3, batch=2)
    res = writer.apply(snap, _five(meta))
    assert len(res.unknown) == 2 and len(res.refused) == 3 and res.rc is None
    assert len(fake.calls()) == 1  # a controller that hangs is not asked again this cycle


def test_a_restore_may_put_back_a_running_jobs_site_factor_only(snap: Snapshot, meta: dict[str, str]) -> None:
    run = meta["run_p100x4"]
    prep = prepare(snap, [JobUpdate(run, site_factor=0)], restore=True)
    assert prep.lines == ((run, f"update JobId={run} SiteFactor=0"),)
    assert prepare(snap, [JobUpdate(run, site_factor=0)]).decided[0].status is S.REFUSED  # not in a cycle
    nodes = prepare(snap, [JobUpdate(run, exc_nodes=())], restore=True).decided[0]
    assert nodes.status is S.REFUSED and nodes.reason == "running"
