"""Which Slurm the daemon talks to and what that changes: the one place a release decides a code path.

Everything is read from ``scontrol show config`` (``SLURM_VERSION``, ``PriorityType``,
``SlurmctldParameters``, ``MetricsType``, ``PrivateData``, ``SlurmUser``), one RPC the daemon makes
before its first cycle anyway. What differs between the releases sites run (22.05 to 25.11):

* **RPC rate limiting** (``SlurmctldParameters=rl_enable``) is enforced from 23.02; 22.05 accepts the
  option and ignores it. The daemon paces itself whenever it is configured (``pacing``), so a
  configuration moved to a newer Slurm is already obeyed; the report says which one this is.
* **Priority plugin.** SiteFactor only moves jobs under ``priority/multifactor`` (the default from
  23.11; ``priority/basic`` before). Under any other plugin the daemon's priority updates do nothing.
* **Slurm's own metrics.** 25.11 serves OpenMetrics on slurmctld's port when ``MetricsType =
  metrics/openmetrics`` and no ``PrivateData`` is set (``slurm.openmetrics``).
* **pyslurm** on PyPI is built for one release (25.11); on any other the CLI reader is the only one.

The CLI formats the reader uses (``squeue -o/-O``, ``sinfo -O``, ``sprio -o``) did not change over
these releases (``make test-versions`` runs the reader against each), so nothing else branches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rltune_daemon.slurm.pacing import RateLimit, rate_limit_from_config

RATE_LIMIT_ENFORCED = (23, 2)
MULTIFACTOR_DEFAULT = (23, 11)
OPENMETRICS = (25, 11)
PYSLURM_RELEASE = (25, 11)

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def _setting(show_config: str, key: str) -> str:
    m = re.search(rf"^\s*{key}\s*=[ \t]*(.*?)\s*$", show_config, re.MULTILINE | re.IGNORECASE)
    value = m.group(1) if m else ""
    return "" if value.lower() in ("(null)", "none") else value


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``22.05.8`` / ``slurm 25.11.7`` / ``SLURM_VERSION = 24.11.7`` -> (22, 5, 8); None if absent."""
    m = _VERSION.search(text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


@dataclass(frozen=True)
class SlurmRelease:
    """A Slurm controller as ``scontrol show config`` describes it, and what follows for the daemon."""

    version: tuple[int, int, int] | None
    priority_type: str
    rate_limit: RateLimit
    metrics_type: str = ""
    private_data: str = ""
    controller: str = ""  # the first SlurmctldHost's address (or name) and port: ``host:port``

    @classmethod
    def from_config(cls, show_config: str, uid: int | None = None) -> SlurmRelease:
        host = re.match(r"([^(\s]+)(?:\(([^)]*)\))?", _setting(show_config, r"SlurmctldHost\[0\]"))
        port = re.match(r"\d+", _setting(show_config, "SlurmctldPort"))  # a range "6817-6820": its first
        address = (host.group(2) or host.group(1)) if host else ""
        return cls(
            version=parse_version(_setting(show_config, "SLURM_VERSION")),
            priority_type=_setting(show_config, "PriorityType"),
            rate_limit=rate_limit_from_config(show_config, uid),
            metrics_type=_setting(show_config, "MetricsType"),
            private_data=_setting(show_config, "PrivateData"),
            controller=f"{address}:{port.group(0) if port else 6817}" if address else "",
        )

    @property
    def series(self) -> str:
        """``25.11`` (the release series pyslurm and the docs name), or ``unknown``."""
        return f"{self.version[0]}.{self.version[1]:02d}" if self.version else "unknown"

    def at_least(self, release: tuple[int, int]) -> bool:
        return self.version is not None and self.version[:2] >= release

    @property
    def rate_limit_enforced(self) -> bool:
        return self.rate_limit.enabled and self.at_least(RATE_LIMIT_ENFORCED)

    @property
    def multifactor(self) -> bool:
        return self.priority_type == "priority/multifactor"

    @property
    def openmetrics(self) -> bool:
        """slurmctld serves ``/metrics/*`` (25.11+, ``MetricsType=metrics/openmetrics``, no PrivateData)."""
        return (self.at_least(OPENMETRICS) and self.metrics_type == "metrics/openmetrics"
                and not self.private_data)

    @property
    def metrics_url(self) -> str:
        """``http://host:port`` of slurmctld's metrics endpoint, or "" where it is off."""
        return f"http://{self.controller}" if self.openmetrics and self.controller else ""

    @property
    def pyslurm_possible(self) -> bool:
        return self.version is not None and self.version[:2] == PYSLURM_RELEASE

    def implications(self) -> list[str]:
        """One line per version-dependent decision, for ``--check-config`` and the start log."""
        v = f"Slurm {'.'.join(map(str, self.version))}" if self.version else "Slurm of unknown version"
        lines = []
        if self.multifactor:
            lines.append("priority/multifactor: SiteFactor updates reorder pending jobs")
        else:
            default = ("priority/multifactor is the default from 23.11"
                       if not self.at_least(MULTIFACTOR_DEFAULT) else "set PriorityType=priority/multifactor")
            lines.append(f"PriorityType={self.priority_type or 'unset'}: SiteFactor updates change "
                         f"nothing ({default})")
        if self.rate_limit.enabled:
            enforced = ("enforced" if self.rate_limit_enforced
                        else "configured but not enforced before 23.02; the daemon keeps to it anyway")
            lines.append(f"rl_enable {enforced}: {self.rate_limit.describe()}")
        else:
            lines.append("RPC rate limit off (no rl_enable); writes paced by [slurm] write_rate")
        if self.openmetrics:
            lines.append(f"OpenMetrics at {self.metrics_url}/metrics: Slurm's own pending/running counts "
                         "cross-check each read; they and the backfill statistics go into the cycle log")
        elif self.at_least(OPENMETRICS):
            why = (f"PrivateData={self.private_data} disables it" if self.private_data
                   else "MetricsType=metrics/openmetrics is not set")
            lines.append(f"Slurm's OpenMetrics off ({why}); the daemon's own gauges stand alone")
        lines.append("pyslurm reader possible ([slurm] reader = \"pyslurm\")" if self.pyslurm_possible
                     else "pyslurm reader not possible (PyPI pyslurm is built for 25.11 only); CLI reader")
        return [f"{v}: {line}" for line in lines]
