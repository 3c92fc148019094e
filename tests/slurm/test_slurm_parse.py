"""Parsers on captured Slurm 22.05 outputs and on nasty synthetic values."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rltune_daemon.formats.slurm import parse_duration, parse_memory_mb, parse_timestamp
from rltune_daemon.slurm.errors import ParseError, SuspectRead
from rltune_daemon.slurm.parse import (
    PrioRecord,
    gpus_in_spec,
    job_line,
    node_usable,
    parse_job_states,
    parse_sinfo_nodes,
    parse_sprio,
    parse_squeue_jobs,
    parse_squeue_tres,
    ping_is_up,
    sprio_line,
)


def _job_line(job_id: str = "7", reason: str = "Priority", **over: str) -> str:
    """A squeue -o record as squeue prints it (free text fixed-width), fields overridable by letter."""
    vals = {
        "%A": job_id, "%F": job_id, "%K": "N/A", "%T": "PENDING", "%u": "alice", "%a": "(null)",
        "%P": "gpu", "%q": "(null)", "%Q": "1113", "%y": "0", "%V": "2026-11-22T13:34:54",
        "%S": "N/A", "%l": "5:00", "%D": "1", "%C": "1", "%m": "1000M", "%b": "gres:gpu:p100:1",
        "%h": "OK", "%N": "", "%n": "", "%x": "", "%r": reason,
    }
    vals.update({f"%{k}": v for k, v in over.items()})
    return job_line(vals)


def _read(path: Path) -> str:
    """A captured output as the reader sees it: one character per byte."""
    return path.read_bytes().decode("latin-1")


# ---- captured squeue -o ------------------------------------------------------------------------


def test_squeue_jobs_captured_every_record(captured: Path, meta: dict[str, str]) -> None:
    parsed = parse_squeue_jobs(_read(captured / "squeue_jobs.txt"))
    assert parsed.skipped == [(meta["pd_long_account"], parsed.skipped[0][1])]
    assert "account is 64 bytes or longer" in parsed.skipped[0][1]
    assert len(parsed.listed) == len(parsed.records) + 1  # the skipped record is still listed
    by_id: dict[str, list[object]] = {}
    for r in parsed.records:
        by_id.setdefault(r.job_id, []).append(r)
    assert len(by_id[meta["pd_array"]]) == 3  # -r: one line per unsplit task, same raw id
    recs = {r.job_id: r for r in parsed.records}
    typed = recs[meta["pd_typed"]]
    assert (typed.state, typed.user, typed.account, typed.qos) == ("PENDING", "root", "", "")
    assert typed.time_limit == 3600 and gpus_in_spec(typed.tres_per_node) == (4, "p100")
    assert recs[meta["pd_notime"]].time_limit == math.inf
    assert recs[meta["pd_held"]].priority == 0 and recs[meta["pd_held"]].reason == "JobHeldUser"
    assert recs[meta["pd_negnice"]].nice == -200 and recs[meta["pd_nice"]].nice == 50
    assert recs[meta["pd_ovs"]].oversubscribe == "YES"
    assert recs[meta["pd_user"]].user == "rltuser"
    nodes = recs[meta["pd_nodes"]]
    assert (nodes.req_nodes, nodes.exc_nodes) == ("p100-2", "k80-[1-2]")
    assert recs[meta["pd_multipart"]].partitions == ("hipri", "gpu")  # Slurm lists the higher tier first
    split = recs[meta["pd_array_split"]]
    assert (split.array_job_id, split.array_task) == (meta["pd_array"], "1")
    assert recs[meta["pd_typed"]].array_job_id == ""
    admin = recs[meta["pd_admin"]]
    # the reason is read by its first 32 bytes
    # (22.05 prints "Nodes required for job are DOWN, DRAINED..."; 23.11 gave every job of this
    # scenario "InvalidAccount": the reason is Slurm's, the parser's part is the frame)
    assert admin.priority == 50000 and admin.reason and len(admin.reason.encode()) <= 32
    run = recs[meta["run_2node_k80"]]
    assert run.state == "RUNNING" and run.node_list == "k80-[1-2]" and run.start is not None
    assert recs[meta["run_p100x2_ovs"]].min_memory_mb == 8192


def test_hostile_account_captured_from_slurm_stays_in_its_field(captured: Path, meta: dict[str, str]) -> None:
    """The account holds '|', a newline and a fake record start; Slurm lowercases it and prints it raw."""
    recs = {r.job_id: r for r in parse_squeue_jobs(_read(captured / "squeue_jobs.txt")).records}
    hostile, plain = recs[meta["pd_hostile"]], recs[meta["pd_site"]]
    assert hostile.account == "acct|9|2026-01-01t00:00:00\n1|forged ✓"
    assert (hostile.user, hostile.partitions, hostile.time_limit) == ("rltuser", ("gpu",), 540.0)
    assert (hostile.priority, gpus_in_spec(hostile.tres_per_node), hostile.reason) == (
        plain.priority - 500, (1, "p100"), plain.reason)  # pd_site has SiteFactor 500
    states = dict(parse_job_states(_read(captured / "squeue_states.txt")))
    assert {r.job_id: r.state for r in recs.values()} == {j: s for j, s in states.items()
                                                          if j != meta["pd_long_account"]}


def test_kit_squeue_values_parse(kit: Path) -> None:
    """Every value of the kit's captured squeue/-O outputs goes through the value parsers."""
    for tag in ("plain", "dbd"):
        for line in (kit / tag / "squeue_pipe.txt").read_text().splitlines():
            f = line.split("|")  # %i|%A|%u|%P|%b|%l|%V|%Q|%T|%r|%y|%h|%N|%D|%C|%m|%S
            parse_duration(f[5])
            assert parse_timestamp(f[6]) is not None
            parse_memory_mb(f[15])
            g, _ = gpus_in_spec(f[4])
            assert g >= 0
        rows = (kit / tag / "squeue_O.txt").read_text().splitlines()[1:]
        per_job = [ln[120:140].strip() for ln in rows]  # TRES_PER_JOB column
        assert "gres:gpu:p100:3" in per_job
        assert gpus_in_spec("gres:gpu:p100:3") == (3, "p100")


# ---- framing / nasty values -------------------------------------------------------------------


def test_free_text_with_separators_newlines_and_fake_records_stays_in_its_field() -> None:
    nasty = "held by admin | see ticket ✓\n42|not a record\n7|also not\n\nend"
    text = _job_line("7", reason="Priority", a=nasty, u="eve|x", q="q\n8|", P="gpu") + _job_line("8")
    parsed = parse_squeue_jobs(text)
    assert [r.job_id for r in parsed.records] == ["7", "8"]
    first = parsed.records[0]
    assert (first.account, first.user, first.qos, first.priority) == (nasty, "eve|x", "q\n8|", 1113)
    assert parsed.records[1].account == ""


def test_a_value_that_fills_its_width_may_be_cut_and_skips_the_record() -> None:
    parsed = parse_squeue_jobs(_job_line("7", a="x" * 64) + _job_line("8", a="y" * 63))
    assert [r.job_id for r in parsed.records] == ["8"] and parsed.skipped[0][0] == "7"
    assert parsed.listed == [("7", "PENDING"), ("8", "PENDING")]
    long_reason = parse_squeue_jobs(_job_line("9", reason="Resources" + " because" * 10)).records[0]
    assert long_reason.reason.startswith("Resources")  # only the start of a reason is read


def test_multibyte_text_is_framed_by_bytes() -> None:
    name = "Ω" * 31  # 62 bytes: fits; one more would be 64
    parsed = parse_squeue_jobs(_job_line("7", u=name) + _job_line("8", u="Ω" * 32))
    assert parsed.records[0].user == name and parsed.skipped[0][0] == "8"


def test_first_record_of_another_shape_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="line 1"):
        parse_squeue_jobs("squeue: error: Invalid job format specification: ExcNodes\n" + _job_line())


def test_cut_output_is_a_suspect_read() -> None:
    text = _job_line("1") + _job_line("2")
    for cut in (len(text) - 1, len(text) - 40, len(_job_line("1")) + 5):
        with pytest.raises(SuspectRead, match="truncated") as err:
            parse_squeue_jobs(text[:cut])
        assert err.value.reason == "truncated"


def test_mangled_middle_record_is_a_suspect_read() -> None:
    text = _job_line("1") + "2|garbage\n" + _job_line("3")
    with pytest.raises(SuspectRead) as err:
        parse_squeue_jobs(text)
    assert err.value.reason == "malformed"


def test_empty_output_is_empty() -> None:
    assert parse_squeue_jobs("").records == []
    assert parse_sprio("").records == []
    assert parse_squeue_tres("").records == []
    assert parse_job_states("") == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("Q", "high"), ("V", "yesterday"), ("l", "5 minutes"), ("C", "-"), ("m", "lots"), ("y", "")],
)
def test_bad_value_skips_only_that_record(field: str, value: str) -> None:
    text = "".join([_job_line("1"), _job_line("2", **{field: value}), _job_line("3")])
    parsed = parse_squeue_jobs(text)
    assert [r.job_id for r in parsed.records] == ["1", "3"]
    assert parsed.skipped[0][0] == "2" and "record 2" in parsed.skipped[0][1]


def test_unicode_and_odd_names() -> None:
    line = _job_line("9", u="jürgen", a="Ω-lab", P="gpu,hipri", n="p100-[1-2]", x="k80-1,m40-1")
    r = parse_squeue_jobs(line).records[0]
    assert (r.user, r.account, r.partitions) == ("jürgen", "Ω-lab", ("gpu", "hipri"))
    assert (r.req_nodes, r.exc_nodes) == ("p100-[1-2]", "k80-1,m40-1")


def test_limits_and_node_ranges() -> None:
    assert parse_squeue_jobs(_job_line(l="UNLIMITED")).records[0].time_limit == math.inf
    assert parse_squeue_jobs(_job_line(l="NOT_SET")).records[0].time_limit == math.inf
    assert parse_squeue_jobs(_job_line(l="365-00:00:00")).records[0].time_limit == 365 * 86400
    assert parse_squeue_jobs(_job_line(D="2-4")).records[0].nodes == 2


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_any_account_text_round_trips(account: str) -> None:
    parsed = parse_squeue_jobs(_job_line("5", a=account) + _job_line("6", a="x"))
    if len(account.encode()) >= 64:  # might have been cut: not trusted
        assert [r.job_id for r in parsed.records] == ["6"] and parsed.skipped[0][0] == "5"
        return
    assert [r.job_id for r in parsed.records] == ["5", "6"]
    expected = account.rstrip(" ")  # trailing spaces cannot be told from padding
    assert parsed.records[0].account == ("" if expected in ("", "(null)", "N/A", "n/a", "None") else expected)


def test_job_states_captured(captured: Path, meta: dict[str, str]) -> None:
    states = dict(parse_job_states(_read(captured / "squeue_states.txt")))
    assert states[meta["pd_typed"]] == "PENDING" and states[meta["run_p100x4"]] == "RUNNING"
    confirm = dict(parse_job_states(_read(captured / "confirm.txt")))
    assert confirm == {meta["done"]: "COMPLETED", meta["pd_typed"]: "PENDING"}  # 999999: not listed
    assert "Invalid job id specified" in (captured / "confirm_invalid.stderr").read_text()
    assert (captured / "confirm_invalid.rc").read_text().strip() == "1"


# ---- squeue -O -------------------------------------------------------------------------------


def test_squeue_tres_captured(captured: Path, meta: dict[str, str]) -> None:
    parsed = parse_squeue_tres(_read(captured / "squeue_tres.txt"))
    recs = {r.job_id: r for r in parsed.records}
    assert len(parsed.records) == len(recs)  # array task lines merged
    assert gpus_in_spec(recs[meta["pd_gpus_per_job"]].tres_per_job) == (3, "p100")
    gpt = recs[meta["pd_gpus_per_task"]]
    assert (gpus_in_spec(gpt.tres_per_task), gpt.num_tasks, gpt.cpus) == ((1, "k80"), 3, 3)
    assert recs[meta["pd_gpus_per_node"]].mem_mb == 8192  # --mem=4G on 2 nodes: total
    assert recs[meta["run_p100x2_ovs"]].cpus == 4


def test_squeue_tres_wrong_shape_raises() -> None:
    with pytest.raises(ParseError):
        parse_squeue_tres("12|N/A|N/A|1|cpu=1|N/A\n")  # missing trailing '|'
    with pytest.raises(ParseError):
        parse_squeue_tres("12_[0-3]|N/A|N/A|1|cpu=1|N/A|\n")  # not a raw id
    good = "12|N/A|N/A|1|cpu=1|2026-11-26T12:19:20|\n"
    assert parse_squeue_tres(good).records[0].eligible is not None
    with pytest.raises(SuspectRead, match="truncated"):
        parse_squeue_tres(good + good[:-3])
    with pytest.raises(SuspectRead, match="malformed"):
        parse_squeue_tres(good + "13|N/A|1|cpu=1|N/A|\n")


# ---- GPU specs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("gres:gpu:p100:4", (4, "p100")),
        ("gres:gpu:2", (2, "")),
        ("gres:gpu", (1, "")),
        ("gres/gpu:a100=2", (2, "a100")),
        ("gres/gpu=3", (3, "")),
        ("gpu:k80:2(IDX:0-1)", (2, "k80")),
        ("gpu:k80:0(IDX:N/A)", (0, "k80")),
        ("gpu:a:1(IDX:0),gpu:b:2(IDX:1-2)", (3, "a")),
        ("gres:gpu:p100:1,gres:shard:4", (1, "p100")),
        ("gpu:a100_3g.20gb:1", (1, "a100_3g.20gb")),
        ("N/A", (0, "")),
        ("(null)", (0, "")),
        ("", (0, "")),
    ],
)
def test_gpus_in_spec(spec: str, expected: tuple[int, str]) -> None:
    assert gpus_in_spec(spec) == expected


# ---- sprio -----------------------------------------------------------------------------------


def test_sprio_captured(captured: Path, meta: dict[str, str]) -> None:
    parsed = parse_sprio(_read(captured / "sprio.txt"))
    rows: dict[str, list[PrioRecord]] = {}
    for p in parsed.records:
        rows.setdefault(p.job_id, []).append(p)
    assert meta["pd_held"] not in rows  # sprio omits held jobs (FACTS a)
    assert {p.partition for p in rows[meta["pd_multipart"]]} == {"gpu", "hipri"}
    assert rows[meta["pd_site"]][0].site_factor == 500
    assert rows[meta["pd_array_split"]][0].site_factor == 5
    flagged = {j for j, ps in rows.items() if ps[0].admin_set()}
    assert flagged == {meta["pd_admin"]}


@pytest.mark.parametrize("tag", ["plain", "dbd"])
def test_admin_rule_on_kit_factor_sums(kit: Path, tag: str) -> None:
    """Kit format %i|%u|%Y|%A|%F|%J|%P|%Q|%N|%T: the real priority equals the rounded factor sum within
    the tolerance (1113 vs 114+1000; 11190 vs 10000+114+1000+77 with slurmdbd)."""
    for line in (kit / tag / "sprio_pipe.txt").read_text().splitlines():
        f = line.split("|")
        tres = sum(float(v.split("=")[1]) for v in f[9].split(",") if "=" in v)
        factors = sum(int(x) for x in f[3:8]) + tres
        rec = PrioRecord(f[0], "gpu", int(f[2]), 0, factors, int(f[8]))
        assert not rec.admin_set(), line


def test_admin_rule_edges() -> None:
    assert PrioRecord("1", "p", 50000, 0, 0.0, 0).admin_set()
    assert PrioRecord("1", "p", 1113, 0, 0.0, 0).admin_set()  # admin set to a "normal" value
    assert not PrioRecord("1", "p", 1, 0, 1114.0, 5000).admin_set()  # nice clamps at 1
    assert not PrioRecord("1", "p", 1613, 500, 1114.0, 0).admin_set()  # site factor included
    assert not PrioRecord("1", "p", 0, 0, 1114.0, 0).admin_set()  # a hold is not "admin priority"


def test_sprio_shape_errors() -> None:
    assert parse_sprio("Unable to find jobs matching user/id(s) specified\n").records == []
    with pytest.raises(ParseError):
        parse_sprio("JOBID|PARTITION|PRIORITY\n")
    bad = sprio_line({"%i": "5", "%Y": "x", "%r": "gpu"})
    assert parse_sprio(bad).skipped[0][0] == "5"
    with pytest.raises(SuspectRead):
        parse_sprio(sprio_line({"%i": "5", "%Y": "1", "%r": "gpu"})[:-2])


def test_sprio_tres_factors_are_summed() -> None:
    line = sprio_line({"%i": "5", "%Y": "11421", "%S": "0", "%A": "0", "%F": "10000", "%J": "114",
                       "%P": "1000", "%Q": "0", "%B": "0", "%N": "0", "%T": "gres/gpu=308,gres/gpu:p100=0.5",
                       "%r": "gpu"})
    rec = parse_sprio(line).records[0]
    assert rec.factors == pytest.approx(10000 + 114 + 1000 + 308.5)
    assert not rec.admin_set()


# ---- sinfo -----------------------------------------------------------------------------------


def test_sinfo_captured(captured: Path) -> None:
    parsed = parse_sinfo_nodes((captured / "sinfo_nodes.txt").read_text())
    assert len(parsed.records) == 10  # 5 nodes x 2 partitions
    rows = {(r.name, r.partition): r for r in parsed.records}
    gpu = rows[("p100-2", "gpu")]
    assert (gpu.gpus, gpu.gpu_type, gpu.gpus_alloc, gpu.cpus, gpu.cpus_alloc) == (4, "p100", 4, 8, 5)
    assert (gpu.mem_mb, gpu.mem_alloc_mb, gpu.default_partition) == (64000, 9192, True)
    hip = rows[("p100-2", "hipri")]
    assert (hip.priority_tier, hip.max_time, hip.default_partition) == (2, 86400, False)
    assert gpu.max_time == math.inf
    assert rows[("m40-1", "gpu")].state == "draining"


def test_kit_sinfo_gres_used(kit: Path) -> None:
    rows = (kit / "plain" / "sinfo_NO.txt").read_text().splitlines()[1:]
    used = {ln.split()[0]: gpus_in_spec(ln.split()[6]) for ln in rows}
    assert used["p100-1"] == (4, "p100") and used["k80-1"] == (1, "k80")


@pytest.mark.parametrize(
    ("state", "usable"),
    [
        ("idle", True), ("mixed", True), ("allocated", True), ("completing", True), ("planned", True),
        ("down", False), ("down*", False), ("idle*", False), ("drained", False), ("draining", False),
        ("mixed+drain", False), ("fail", False), ("failing", False), ("unknown", False),
        ("idle+maint", False), ("", False),
    ],
)
def test_node_usable(state: str, usable: bool) -> None:
    assert node_usable(state) is usable


def test_sinfo_wrong_field_count_raises() -> None:
    with pytest.raises(ParseError):
        parse_sinfo_nodes("k80-1|gpu:k80:2|mixed|\n")


def test_ping(captured: Path) -> None:
    assert ping_is_up((captured / "ping_up.txt").read_text())
    assert not ping_is_up((captured / "ping_down.txt").read_text())
    assert not ping_is_up("")


def test_gpu_requests_as_every_release_prints_them() -> None:
    """22.05 prints ``gpu:2``/``gres:gpu:p100:3``; 23.11-25.11 print squeue's ``%b`` and ``tres-per-job``
    as ``gres/gpu:2``/``gres/gpu:p100:3`` and ``tres-per-task`` as ``gres/gpu:k80=1`` (captured from
    each release by ``make test-versions``): a count is never read as a GPU type."""
    assert gpus_in_spec("gres/gpu:2") == (2, "")
    assert gpus_in_spec("gres/gpu:p100:3") == (3, "p100")
    assert gpus_in_spec("gres/gpu:k80=1") == (1, "k80")
    assert gpus_in_spec("gres/gpu=4") == (4, "")
    assert gpus_in_spec("gres/gpu") == (1, "")
    assert gpus_in_spec("gpu:2") == gpus_in_spec("gres:gpu:2") == (2, "")
