"""``rltune bench cycle``: its pure parts (argument parsing, update counting, cycle phases, latency split,
summary, report) and, on a real local Slurm, one small run end to end. Timings are never asserted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rltune_daemon.bench.cycle import (
    STAGES,
    min_moves,
    parse_policies,
    parse_sizes,
    phase_of,
    results_md,
    summarise,
    update_kinds,
)
from rltune_daemon.bench.load import split_latency
from rltune_daemon.cli.main import main
from rltune_daemon.errors import UserError


def test_parse_sizes_and_policies() -> None:
    assert parse_sizes("128, 1024,10_000") == [128, 1024, 10_000]
    for bad in ("ten", "", "0,5"):
        with pytest.raises(UserError):
            parse_sizes(bad)
    specs = parse_policies("rltune:models/testbed-multifactor,daemon:sjf")
    assert [(s.model, s.base_policy) for s in specs] == [("models/testbed-multifactor", "multifactor"),
                                                         ("", "sjf")]
    for bad in ("sjf", "daemon:nosuch", "rltune:models/nosuch", "", "other:sjf"):
        with pytest.raises(UserError):
            parse_policies(bad)


def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "cycle", "--pending", "ten"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--pending" in err
    assert main(["bench", "cycle", "--interval", "1"]) == 2
    assert "--interval" in capsys.readouterr().err


def test_update_kinds_counts_fields_and_clears() -> None:
    lines = ["update JobId=5 SiteFactor=10", "update JobId=6 SiteFactor=-3 ExcNodeList=p100-[1-2]",
             "update JobId=7 ExcNodeList=", "update JobId=8 ReqNodeList= OverSubscribe=no"]
    kinds = update_kinds(lines)
    assert kinds == {"SiteFactor": 2, "ExcNodeList": 1, "ExcNodeList clear": 1, "ReqNodeList clear": 1,
                     "OverSubscribe": 1}


def test_phase_of() -> None:
    assert phase_of(1, []) == "first"
    assert phase_of(2, [300]) == "filling"  # the first cycle left updates for later
    assert phase_of(3, [300, 0]) == "steady"  # everything planned is in Slurm
    assert phase_of(2, [0]) == "steady"


def test_min_moves() -> None:
    assert min_moves(list("abcde"), list("abcde")) == 0
    assert min_moves(list("abcde"), list("eabcd")) == 1  # one job jumped to the front
    assert min_moves(list("abcde"), list("edcba")) == 4
    assert min_moves(list("abc"), list("xbca")) == 1  # new and gone jobs do not count


def test_split_latency_by_cycles_and_cancels() -> None:
    cycles = [(10.0, 12.0), (20.0, 22.0)]
    samples = [(5.0, 0.1),  # before the first cycle: neither
               (11.0, 0.1),  # inside cycle 1
               (9.95, 0.1),  # overlaps cycle 1's start: inside
               (15.0, 0.1),  # between
               (16.0, 0.5),  # overlaps the cancel: neither
               (30.0, 0.1)]  # after the last cycle: neither
    out = split_latency(samples, cycles, [(16.2, 16.3)])
    assert out == {"inside": [0.1, 0.1], "between": [0.1]}
    assert split_latency(samples, []) == {"inside": [], "between": []}


def _row(cycle: int, phase: str, total: float, jobs: int) -> dict[str, Any]:
    return {"cycle": cycle, "phase": phase, "errors": 0, "total_s": total, "commands": 6, "commands_read": 5,
            "commands_write": 1 if jobs else 0, "jobs_updated": jobs, "deferred": 0,
            "stages_s": dict.fromkeys(STAGES, total / len(STAGES)),
            "updates_by_kind": {"SiteFactor": jobs}, "commands_by_kind": {"read:sprio": 1}}


def test_summarise_and_report() -> None:
    rows = [_row(1, "first", 3.0, 500), _row(2, "filling", 2.0, 500), _row(3, "steady", 1.0, 10),
            _row(4, "steady", 0.5, 0), _row(5, "steady", 0.7, 2)]
    s = summarise(rows)
    assert s["first"]["total_s"] == 3.0 and s["filling_cycles"] == 1
    steady = s["steady_median"]
    assert steady["cycles"] == 3 and steady["total_s"] == 0.7 and steady["jobs_updated"] == 2
    assert steady["max_total_s"] == 1.0 and steady["updates_by_kind"]["SiteFactor"] == 2
    result = {"command": "rltune bench cycle", "interval": 10.0, "write_batch": 100, "write_rate": 200.0,
              "max_updates_per_cycle": 500, "runs": [
                  {"policy": "daemon:sjf", "pending": 1024, "summary": s,
                   "sbatch": {"before": {"p50_ms": 7.0, "p95_ms": 9.0}}}]}
    md = results_md(result)
    assert "| daemon:sjf | 1,024 | first | 3.000 |" in md and "steady (median)" in md
    # a run that never stops deferring updates: the median of its last cycles, said as such
    unsettled = summarise([_row(1, "first", 3.0, 500), _row(2, "filling", 2.0, 500),
                           _row(3, "filling", 2.5, 500)], tail=2)
    assert "steady_median" not in unsettled and unsettled["unsettled_median"]["total_s"] == 2.25


@pytest.mark.slurm
def test_bench_cycle_on_local_slurm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """20 pending jobs, two steady cycles of SJF: every cycle applied, the first writes, the read is the
    documented five commands, and results.json/results.md are written."""
    from rltune_daemon.slurm.localcluster import slurm_installed

    if os.geteuid() != 0:
        pytest.skip("needs root (starts a local Slurm)")
    assert slurm_installed(), "Slurm is not installed: run make setup"
    rc = main(["bench", "cycle", "--pending", "20", "--policies", "daemon:sjf", "--steady", "2",
               "--interval", "5", "--baseline", "1", "--quiet", "--out", str(tmp_path)])
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["runs"][0]["pending"] == 20
    data = json.loads((tmp_path / "results.json").read_text())
    cycles = data["runs"][0]["cycles"]
    assert [c["phase"] for c in cycles][:1] == ["first"] and cycles[-1]["phase"] == "steady"
    assert all(c["outcome"] == "applied" and not c["errors"] for c in cycles)
    # one scontrol batch (plus a ping only when the read was more than 2 s before the write)
    assert cycles[0]["jobs_updated"] > 0 and cycles[0]["commands_write"] >= 1
    read = {k: v for k, v in cycles[-1]["commands_by_kind"].items() if k.startswith("read:")}
    assert read == {"read:scontrol ping": 1, "read:sprio": 1, "read:squeue": 2, "read:sinfo": 1}
    assert (tmp_path / "results.md").read_text().startswith("# `rltune bench cycle`")
