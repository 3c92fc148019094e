"""``rltune bench decide``: the synthetic decision state is sane and the command reports every size."""

from __future__ import annotations

import json

import pytest

from rltune_daemon.bench.decide import decision_snapshot
from rltune_daemon.cli.main import main
from rltune_daemon.traces import load_workload


def test_decision_snapshot_is_consistent_and_seeded() -> None:
    wl = load_workload("philly", estimates="user", seed=0)
    snap = decision_snapshot(wl, 300, seed=3)
    assert len(snap.pending) == 300 and len({j.id for j in snap.pending}) == 300
    assert all(j.submit <= snap.clock and j.runtime is None for j in snap.pending)
    for node in snap.nodes:
        assert 0 <= node.gpus_alloc <= node.gpus and 0 <= node.cpus_alloc <= node.cpus
    held = {a.node: a.gpus for r in snap.running for a in r.allocation}
    assert all(held.get(n.name, 0) == n.gpus_alloc for n in snap.nodes)
    busy = sum(n.gpus_alloc for n in snap.nodes) / sum(n.gpus for n in snap.nodes)
    assert 0.6 < busy < 1.0
    assert decision_snapshot(wl, 300, seed=3) == snap
    assert decision_snapshot(wl, 300, seed=4) != snap


def test_bench_decide_json(capsys: pytest.CaptureFixture[str]) -> None:
    """With a trained model (an untrained actor's random ranking may put no job that fits now in the top
    K, and then, as in the daemon, the MILP has nothing to place) the MILP runs at every size."""
    rc = main(["bench", "decide", "--trace", "testbed", "--sizes", "20,300", "--repeat", "1", "--quiet",
               "--model", "models/testbed-multifactor"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["pending"] for r in data["results"]] == [20, 300]
    assert all(r["plan_total_s"] > 0 and r["placement"] for r in data["results"])


def test_bench_decide_bad_sizes_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "decide", "--trace", "testbed", "--sizes", "ten"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sizes" in err
