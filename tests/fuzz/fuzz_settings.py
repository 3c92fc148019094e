"""How hard the fuzz tests try: a few hundred examples per parser in ``make test``, 10,000 or more in
``make fuzz`` (``RLTUNE_FUZZ_EXAMPLES``). Derandomised so that a failure repeats on the next run."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("RLTUNE_FUZZ_EXAMPLES", "300"))

fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    database=None,
)
