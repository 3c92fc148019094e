"""Fixtures for the Slurm backend tests: captured outputs (see tests/fixtures/slurm/README.md) and a
Snapshot assembled from them. The real-cluster fixture lives in tests/slurm_fixtures.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakebin import FakeBin

from rltune_daemon.domain import Snapshot
from rltune_daemon.domain.updates import ReadInfo
from rltune_daemon.slurm.assemble import build_snapshot
from rltune_daemon.slurm.parse import (
    PrioRecord,
    parse_sinfo_nodes,
    parse_sprio,
    parse_squeue_jobs,
    parse_squeue_tres,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
CAPTURED = FIXTURES / "captured"
KIT = FIXTURES / "kit"
# captured/ is Debian's 22.05; captured-<release>/ the same scenario on each release `make test-versions`
# built, so every test on captured output runs on every release's output.
RELEASES = [CAPTURED, *sorted(FIXTURES.glob("captured-*"))]


@pytest.fixture(scope="session", params=RELEASES, ids=lambda p: p.name.removeprefix("captured-")
                .replace("captured", "22.05"))
def captured(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


@pytest.fixture(scope="session")
def kit() -> Path:
    return KIT


@pytest.fixture(scope="session")
def meta(captured: Path) -> dict[str, str]:
    data: dict[str, str] = json.loads((captured / "meta.json").read_text())
    return data


def read_latin1(path: Path) -> str:
    """A captured output as the reader decodes it: one character per byte (framed by byte widths)."""
    return path.read_bytes().decode("latin-1")


def snapshot_from(directory: Path, clock: float = 0.0) -> tuple[Snapshot, ReadInfo]:
    jobs = parse_squeue_jobs(read_latin1(directory / "squeue_jobs.txt"))
    tres = parse_squeue_tres(read_latin1(directory / "squeue_tres.txt"))
    prio = parse_sprio(read_latin1(directory / "sprio.txt"))
    nodes = parse_sinfo_nodes(read_latin1(directory / "sinfo_nodes.txt"))
    by_job: dict[str, list[PrioRecord]] = {}
    for p in prio.records:
        by_job.setdefault(p.job_id, []).append(p)
    return build_snapshot(clock, jobs.records, {t.job_id: t for t in tres.records}, by_job, nodes.records)


@pytest.fixture(scope="session")
def captured_snapshot(captured: Path) -> tuple[Snapshot, ReadInfo]:
    return snapshot_from(captured)


@pytest.fixture
def fake(tmp_path: Path, captured: Path) -> FakeBin:
    """The reader's five Slurm commands as fake programs answering with the captured real outputs."""
    fb = FakeBin(tmp_path / "bin")
    fb.add("scontrol", by_arg={"ping": ((captured / "ping_up.txt").read_text(), 0)})
    fb.add("squeue", by_arg={"-o": ((captured / "squeue_jobs.txt").read_text(), 0),
                             "-O": ((captured / "squeue_tres.txt").read_text(), 0)})
    fb.add("sprio", stdout=(captured / "sprio.txt").read_text())
    fb.add("sinfo", stdout=(captured / "sinfo_nodes.txt").read_text())
    return fb
