"""Shared test configuration. Fixtures that start real services live in their own plugin modules."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["slurm_fixtures"]

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
