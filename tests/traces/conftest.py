"""Shared fixtures for the traces tests: bundled workloads are loaded once per session (philly takes
~0.5 s), small generator sizes keep the suite fast."""

from __future__ import annotations

from pathlib import Path

import pytest

from rltune_daemon.domain.workload import Workload
from rltune_daemon.traces import load_workload

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def philly() -> Workload:
    return load_workload("philly")


@pytest.fixture(scope="session")
def helios() -> Workload:
    return load_workload("helios")


@pytest.fixture(scope="session")
def alibaba() -> Workload:
    return load_workload("alibaba")


@pytest.fixture(scope="session")
def openb() -> Workload:
    return load_workload("alibaba-openb")


@pytest.fixture(scope="session")
def testbed() -> Workload:
    return load_workload("testbed")
