"""What a ``results.json`` says was run, including settings it predates.

A results file records every setting ``rltune evaluate`` had when it was written. Settings added
later are absent from older files, and their defaults have moved since (the guard's stretch was 0,
its reference Slurm's priority order, backfill EASY), so "absent" means "the value runs had before the
setting existed", never "today's default". The report reads them through
here, so it describes an old run as it ran.
"""

from __future__ import annotations

from typing import Any

# The value every run had before the setting was recorded.
AS_RUN_BEFORE: dict[str, Any] = {
    "starvation_stretch": 0.0,  # the guard waited starvation_seconds for every job
    "starvation_reference": "priority",  # kept back below its multifactor position only
    "bf_reservations": 1,  # EASY backfill
    "starvation_slots": 0,
    "react": 0.0,  # re-planned at the interval only
    "interval": 60.0,
    "starvation_seconds": 4 * 3600.0,
    "split": "held-out",
}
# What runs record of daemon:multifactor: it writes no SiteFactor ("slurm-order"), as the daemon with
# base_policy multifactor does; runs recorded without the key wrote the planner's ("planned").
DAEMON_MULTIFACTOR = "slurm-order"


def settings_as_run(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (a results file's) with every setting it predates filled in as it was run."""
    return {**AS_RUN_BEFORE, **config}
