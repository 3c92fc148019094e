"""The pyslurm reader against the CLI reader on one live queue, field by field.

Runs where pyslurm imports and the local Slurm is the release it was built for (25.11: ``make
test-versions`` builds pyslurm against its 25.11 and runs this file with it); skipped elsewhere, which
includes ``make test`` on Debian's 22.05. The queue is the captured-output scenario (every GPU request
style, split and unsplit arrays, hostile names and accounts, admin priority, nice, node lists, a
drained node), read by both readers with no change to Slurm in between.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from rltune_daemon.slurm.release import PYSLURM_RELEASE, SlurmRelease
from slurm_fixtures import SlurmTestCluster

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def queue(slurm_cluster: SlurmTestCluster) -> Iterator[tuple[SlurmTestCluster, dict[str, str]]]:
    c = slurm_cluster
    release = SlurmRelease.from_config(c.scontrol("show", "config"))
    if release.version is None or release.version[:2] != PYSLURM_RELEASE:
        pytest.skip(f"pyslurm is built for Slurm 25.11; this Slurm is {release.series}")
    if importlib.util.find_spec("pyslurm") is None:
        pytest.skip("pyslurm is not installed here; make test-versions installs it for 25.11")
    c.cancel_all()
    meta = c.mixed_queue()
    try:
        yield c, meta
    finally:
        c.run("scontrol", "update", "NodeName=m40-1", "State=RESUME", check=False)
        c.cancel_all()


def _fields(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else dict(obj._asdict())


def _differences(cli: Any, lib: Any) -> list[str]:
    a, b = _fields(cli), _fields(lib)
    return [f"{k}: cli {a[k]!r} pyslurm {b.get(k)!r}" for k in a if a[k] != b.get(k)]


def test_pyslurm_and_cli_read_the_same_snapshot(queue: tuple[SlurmTestCluster, dict[str, str]]) -> None:
    from rltune_daemon.slurm.pyslurm_backend import PyslurmReader

    c, meta = queue
    cli_reader, lib_reader = c.reader(), PyslurmReader(c.runner())
    # twice around the pyslurm read: a backfill pass between the reads changes expected start times
    # and reasons, and a comparison is only fair when the CLI read before and after agree
    for _ in range(5):
        before, lib, cli = cli_reader.read(), lib_reader.read(), cli_reader.read()
        if (before.pending, before.pending_state, before.running) == (cli.pending, cli.pending_state,
                                                                        cli.running):
            break
    assert cli.pending and cli.running
    info = cli_reader.last
    assert info is not None
    # the one difference by design: a 64-byte account is more than the CLI's frame holds (it skips the
    # job), and pyslurm reads it whole
    too_long = {job_id for job_id, why in info.skipped if "bytes or longer" in why}
    assert too_long == {meta["pd_long_account"]}
    pending_cli = {j.id: (j, st) for j, st in zip(cli.pending, cli.pending_state, strict=True)}
    pending_lib = {j.id: (j, st) for j, st in zip(lib.pending, lib.pending_state, strict=True)
                   if j.id not in too_long}
    problems: list[str] = []
    for what, xs, ys in (("pending", pending_cli, pending_lib),
                         ("running", {r.job.id: (r,) for r in cli.running},
                          {r.job.id: (r,) for r in lib.running}),
                         ("node", {n.name: (n,) for n in cli.nodes}, {n.name: (n,) for n in lib.nodes})):
        problems += [f"{what} {k}: only the CLI reads it" for k in xs.keys() - ys.keys()]
        problems += [f"{what} {k}: only pyslurm reads it" for k in ys.keys() - xs.keys()]
        for k in sorted(xs.keys() & ys.keys()):
            for x, y in zip(xs[k], ys[k], strict=True):
                problems += [f"{what} {k}: {d}" for d in _differences(x, y)]
    assert not problems, "\n".join(problems)
    assert [j.id for j in lib.pending if j.id not in too_long] == [j.id for j in cli.pending]  # same order
    long_account = next(j for j in lib.pending if j.id == meta["pd_long_account"])
    assert long_account.account == "a" * 70
    hostile = next(j for j in lib.pending if j.id == meta["pd_hostile"])
    assert hostile.account == "acct|9|2026-01-01t00:00:00\n1|forged ✓" and hostile.gpus == 1
    assert lib_reader.last is not None and cli_reader.last is not None
    assert lib_reader.last.display_ids == cli_reader.last.display_ids
    assert lib_reader.last.array_tasks == cli_reader.last.array_tasks
