"""Fuzzing every parser of Slurm output: any bytes give records or the documented errors (``ParseError``
for an output of another shape, ``SuspectRead`` for one cut or mangled after good records), never a crash;
records rendered exactly as squeue/sprio print them, hostile text included, come back field for field."""

from __future__ import annotations

import contextlib
import math

from fuzz_settings import fuzz
from hypothesis import assume, given
from hypothesis import strategies as st

from rltune_daemon.domain.updates import UpdateStatus
from rltune_daemon.slurm.errors import ParseError, SuspectRead
from rltune_daemon.slurm.history import parse_history
from rltune_daemon.slurm.pacing import rate_limit_from_config
from rltune_daemon.slurm.parse import (
    SPRIO_TEXT_FIELDS,
    SQUEUE_TEXT_FIELDS,
    job_line,
    parse_job_states,
    parse_sinfo_nodes,
    parse_sprio,
    parse_squeue_jobs,
    parse_squeue_tres,
    ping_is_up,
    sprio_line,
)
from rltune_daemon.slurm.writer import map_results

DOCUMENTED = (ParseError, SuspectRead)
NONE_WORDS = ("", "(null)", "N/A", "n/a", "None")

# text as Slurm may print it: any character but NUL (C strings), bias towards the separators
hostile = st.text(
    alphabet=st.one_of(st.sampled_from("|\n\r\t ,:=()[]%*-_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
                       st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
    max_size=90)
raw_output = st.one_of(
    st.text(max_size=400),
    st.binary(max_size=400).map(lambda b: b.decode("latin-1")),
    st.lists(st.text(alphabet="0123456789|\nPENDINGRUNG:-TN/A()", max_size=60), max_size=8).map("\n".join),
)


def _parse_all(text: str) -> None:
    for parser in (parse_squeue_jobs, parse_squeue_tres, parse_sprio, parse_sinfo_nodes, parse_job_states):
        with contextlib.suppress(DOCUMENTED):
            parser(text)


@fuzz
@given(raw_output)
def test_any_output_gives_records_or_a_documented_error(text: str) -> None:
    _parse_all(text)
    ping_is_up(text)
    rate_limit_from_config(text, uid=1000)


def _utf8_fits(value: str, width: int) -> bool:
    return len(value.encode("utf-8")) < width


@st.composite
def job_records(draw: st.DrawFn) -> dict[str, str]:
    job_id = str(draw(st.integers(min_value=1, max_value=4_294_967_294)))
    return {
        "%A": job_id, "%F": job_id, "%K": draw(st.sampled_from(["N/A", "0", "17"])),
        "%T": draw(st.sampled_from(["PENDING", "RUNNING"])),
        "%Q": str(draw(st.integers(min_value=0, max_value=4_294_967_295))),
        "%y": str(draw(st.integers(min_value=-10000, max_value=10000))),
        "%V": "2026-11-22T13:34:54", "%S": draw(st.sampled_from(["N/A", "2026-11-22T14:00:00"])),
        "%l": draw(st.sampled_from(["5:00", "1-00:00:00", "UNLIMITED", "30"])),
        "%D": str(draw(st.integers(min_value=1, max_value=64))), "%C": str(draw(st.integers(1, 512))),
        "%m": draw(st.sampled_from(["1000M", "8G", "0"])),
        "%b": draw(st.sampled_from(["gres:gpu:p100:1", "N/A", "gres:gpu:2"])), "%h": "OK",
        "%N": draw(st.sampled_from(["", "p100-[1-2]"])), "%n": "",
        "%x": draw(st.sampled_from(["", "k80-1"])),
        "%u": draw(hostile), "%a": draw(hostile), "%P": draw(hostile), "%q": draw(hostile),
        "%r": draw(hostile),
    }


def _expected_text(value: str) -> str:
    v = value.encode("utf-8").decode("utf-8").rstrip(" ")
    return "" if v in NONE_WORDS else v


@fuzz
@given(st.lists(job_records(), min_size=1, max_size=6))
def test_squeue_records_round_trip_with_hostile_text_in_every_free_field(recs: list[dict[str, str]]) -> None:
    text = "".join(job_line(r) for r in recs)  # already one character per byte, as the reader decodes
    parsed = parse_squeue_jobs(text)
    assert [j for j, _ in parsed.listed] == [r["%A"] for r in recs]  # every record, in order
    by_pos = iter(parsed.records)
    skipped = {j for j, _ in parsed.skipped}
    for r in recs:
        whole = all(_utf8_fits(r[f"%{c}"], w) for c, w in SQUEUE_TEXT_FIELDS[:4])
        if not whole:
            assert r["%A"] in skipped  # a value that may have been cut is never used
            continue
        got = next(by_pos)
        assert got.job_id == r["%A"] and got.state == r["%T"] and got.priority == int(r["%Q"])
        assert got.nice == int(r["%y"]) and got.nodes == int(r["%D"]) and got.cpus == int(r["%C"])
        assert got.tres_per_node == ("" if r["%b"] == "N/A" else r["%b"])
        assert got.exc_nodes == r["%x"] and got.node_list == r["%N"]
        assert got.user == _expected_text(r["%u"]) and got.account == _expected_text(r["%a"])
        assert got.qos == _expected_text(r["%q"])
        assert got.partitions == tuple(p for p in _expected_text(r["%P"]).split(",") if p)
        reason = r["%r"].encode("utf-8")[:SQUEUE_TEXT_FIELDS[4][1]].decode("utf-8", "replace")
        assert got.reason == reason.rstrip(" ").strip()
        if r["%l"] == "UNLIMITED":
            assert math.isinf(got.time_limit)


@fuzz
@given(st.lists(job_records(), min_size=1, max_size=4), st.data())
def test_a_cut_squeue_output_is_never_taken_as_whole(recs: list[dict[str, str]], data: st.DataObject) -> None:
    text = "".join(job_line(r) for r in recs)  # already one character per byte, as the reader decodes
    cut = data.draw(st.integers(min_value=1, max_value=len(text) - 1))
    assume(text[cut - 1] != "\n")  # a cut at a record boundary is complete as far as framing can tell
    try:
        parsed = parse_squeue_jobs(text[:cut])
    except DOCUMENTED:
        return
    raise AssertionError(f"{len(parsed.listed)} record(s) read from an output cut at byte {cut}")


@fuzz
@given(st.lists(st.tuples(st.integers(1, 99999999), st.integers(0, 10**9), st.integers(-10**6, 10**6),
                          hostile), min_size=1, max_size=5))
def test_sprio_records_round_trip(rows: list[tuple[int, int, int, str]]) -> None:
    text = "".join(sprio_line({"%i": str(i), "%Y": str(p), "%S": str(s), "%A": "0", "%F": "0", "%J": "7",
                               "%P": "0", "%Q": "0", "%B": "0", "%N": "0", "%T": "", "%r": part})
                   for i, p, s, part in rows)
    parsed = parse_sprio(text)
    kept = [(i, p, s, part) for i, p, s, part in rows if _utf8_fits(part, SPRIO_TEXT_FIELDS[0][1])]
    got = [(int(r.job_id), r.priority, r.site_factor) for r in parsed.records]
    assert got == [(i, p, s) for i, p, s, _ in kept]
    assert [r.partition for r in parsed.records] == [_expected_text(part) for *_, part in kept]


@fuzz
@given(st.lists(st.tuples(st.integers(1, 10**9), st.sampled_from(["PENDING", "RUNNING", "COMPLETED"])),
                max_size=6))
def test_job_states_round_trip(rows: list[tuple[int, str]]) -> None:
    text = "".join(f"{i}|{s}|\n" for i, s in rows)
    assert parse_job_states(text) == [(str(i), s) for i, s in rows]


@fuzz
@given(st.text(max_size=300), st.lists(st.integers(1, 99999), min_size=1, max_size=5, unique=True),
       st.sampled_from([0, 1, None]))
def test_scontrol_answers_map_to_a_status_per_sent_job(stderr: str, ids: list[int], rc: int | None) -> None:
    lines = [(str(i), f"update JobId={i} SiteFactor=1") for i in ids]
    out = map_results(lines, rc, stderr, timed_out=rc is None)
    assert [r.job_id for r in out] == [str(i) for i in ids]
    assert all(r.status in (UpdateStatus.APPLIED, UpdateStatus.FAILED, UpdateStatus.UNKNOWN) for r in out)
    if rc is None:
        assert {r.status for r in out} == {UpdateStatus.UNKNOWN}


SACCT_HEADER = "JobID|User|Submit|Start|End|ReqTRES|AllocTRES|Timelimit|State"
sacct_rows = st.lists(st.text(alphabet="|0123456789:-TN/Acpu=,gres/gpu", max_size=40), max_size=5)


@fuzz
@given(st.one_of(st.text(max_size=300), sacct_rows.map(lambda ls: "\n".join([SACCT_HEADER, *ls]))))
def test_sacct_history_gives_runs_or_a_parse_error(text: str) -> None:
    try:
        runs = parse_history(text)
    except ParseError:
        return
    assert len(runs.ids) == len(runs.users) == len(runs.gpus) == len(runs.runtime)
