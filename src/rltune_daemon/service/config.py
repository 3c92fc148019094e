"""Daemon configuration: a TOML file, overridden by ``RLTUNE_*`` environment variables.

Precedence (highest first): explicit overrides from the command line (``--dry-run``, ``--backend``),
environment (``RLTUNE_INTERVAL=30``, nested keys with ``__``: ``RLTUNE_PLANNER__TOP_K=8``, lists as
JSON: ``RLTUNE_EXEMPT__USERS='["alice"]'``), the TOML file, defaults. Unknown keys are errors, so a
typo never silently leaves a safety setting at its default. Every error is one line naming the key
and what it accepts (``ConfigError``), because an operator reads it in ``journalctl``.
"""

from __future__ import annotations

import contextvars
import json
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from rltune_daemon.core.steer import MAX_UPDATES_DEFAULT
from rltune_daemon.errors import UserError
from rltune_daemon.planner.config import (
    INTERVAL_DEFAULT,
    NEXT_IN_LINE_DEFAULT,
    REACT_DEFAULT,
    REORDER_DEFAULT,
    STARVATION_CAP_DEFAULT,
    STARVATION_REFERENCE_DEFAULT,
    STARVATION_SECONDS_DEFAULT,
    STARVATION_STRETCH_DEFAULT,
    STARVATION_STRETCH_MAX,
    GuardReference,
    PlannerConfig,
    Reorder,
    loop_settings,
)
from rltune_daemon.policies.registry import BASELINES, DAEMON_DEFAULT
from rltune_daemon.service.statefile import journal_path

# A cycle is a handful of slurmctld RPCs plus a planner run; more often than every few seconds it would
# load the controller without being able to react faster than Slurm's own scheduling passes.
INTERVAL_MIN = 5.0
REACT_MIN = 1.0
WRITE_BATCH_DEFAULT = 100
WRITE_RATE_DEFAULT = 200.0
DEFAULT_CONFIG_PATH = "/etc/rltune-daemon/rltune-daemon.toml"
DEFAULT_STATE_FILE = "/var/lib/rltune-daemon/state.db"
ENV_PREFIX = "RLTUNE_"
_TOML_DATA: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("toml", default=None)


class ConfigError(UserError):
    """Invalid configuration: one line naming the key (``planner.top_k``) and the allowed values."""


def _names(v: object) -> object:
    """Lists from the environment: JSON (``["a","b"]``) or comma-separated (``a,b``)."""
    if not isinstance(v, str):
        return v
    text = v.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"not a JSON list of names: {text}") from None
    return tuple(x.strip() for x in text.split(",") if x.strip())


# Name lists parse the same from TOML arrays and from the environment (JSON or comma-separated).
Names = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_names)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlannerSection(_Section):
    """Maps onto ``planner.PlannerConfig`` plus the applier's hint lifetime."""

    top_k: int = Field(16, ge=1, le=256, description="jobs the placement step considers per cycle")
    placement: bool = Field(True, description="emit node hints for jobs that can start now")
    placer: Literal["milp", "greedy"] = Field("milp", description="MILP falls back to greedy, counted")
    milp_time_limit: float = Field(0.5, gt=0, le=30, description="wall-clock seconds per MILP solve")
    hint_cycles: int = Field(2, ge=1, le=100, description="cycles a hinted job may stay pending")
    starvation_seconds: float = Field(STARVATION_SECONDS_DEFAULT, gt=0,
                                      description="starvation guard: longest a job stays kept back")
    starvation_slots: int = Field(0, ge=0, le=10000, description="kept-back jobs restored at once per "
                                  "tier, longest first (0: all)")
    starvation_stretch: float = Field(STARVATION_STRETCH_DEFAULT, ge=0, le=STARVATION_STRETCH_MAX,
                                      description="a long job may stay kept back up to this many times its "
                                      "time limit (0: starvation_seconds for all)")
    starvation_cap_seconds: float = Field(STARVATION_CAP_DEFAULT, gt=0,
                                          description="the stretched guard never exceeds this")
    starvation_reference: GuardReference = Field(
        STARVATION_REFERENCE_DEFAULT, description="kept back below which position: Slurm's own priority "
        "order, submit order, or the earlier of both")
    reorder: Reorder = Field(REORDER_DEFAULT, description="size-class: reorder only jobs of one size "
                             "class (GPUs; per tier and partition) among themselves, each class keeping "
                             "its places in Slurm's order, so large jobs never pay for small ones; queue: "
                             "reorder every job")
    next_in_line: int = Field(NEXT_IN_LINE_DEFAULT, ge=0, le=1000, description="with reorder = size-class: "
                              "the first N jobs of each tier and partition, in Slurm's order, that cannot "
                              "start now keep their places (Slurm drains nodes for them)")


class ExemptSection(_Section):
    """Jobs matching any list are never touched (SLA-bound work keeps Slurm's own priority)."""

    qos: Names = ()
    partitions: Names = ()
    users: Names = ()
    accounts: Names = ()


class ScopeSection(_Section):
    """When a list is set, only jobs of those users / accounts are touched (a pilot on one team)."""

    users: Names = ()
    accounts: Names = ()


class MetricsSection(_Section):
    enabled: bool = True
    bind: str = Field("127.0.0.1", min_length=1, description="address of the /metrics endpoint")
    port: int = Field(9810, ge=0, le=65535, description="0 picks a free port (logged)")


class SlurmSection(_Section):
    conf: str = Field("", description="slurm.conf path (empty: SLURM_CONF or Slurm's default)")
    bin_dir: str = Field("", description="directory of squeue/scontrol/... (empty: PATH)")
    reader: Literal["cli", "pyslurm"] = Field("cli", description=(
        "how jobs and nodes are read: cli (squeue/sinfo, every release) or pyslurm (libslurm, Slurm 25.11 "
        "with pyslurm installed; sprio and squeue -O stay CLI)"))
    timeout: float = Field(20.0, gt=0, le=600, description="seconds per Slurm command")
    ping_timeout: float = Field(5.0, gt=0, le=120)
    max_calls_per_cycle: int = Field(16, ge=8, le=1000, description="client calls of one cycle, reads "
                                     "and checks (the write batches are bounded by max_updates_per_cycle)")
    max_updates_per_cycle: int = Field(MAX_UPDATES_DEFAULT, ge=1, le=100_000, description=(
        "jobs updated per cycle at most: undoing first, then hints, then priorities from the head of the "
        "plan; the rest follow in later cycles"))
    write_batch: int = Field(WRITE_BATCH_DEFAULT, ge=1, le=5000,
                             description="update lines per scontrol process")
    write_rate: float = Field(WRITE_RATE_DEFAULT, ge=0, le=100_000,
                              description="update lines per second at most (0: no pause between batches)")
    max_drop_share: float = Field(0.5, gt=0, le=1, description=(
        "a read in which the queue shrank by more than this share is written on only once Slurm "
        "confirms the vanished jobs ended (or the next read agrees)"))
    partitions: Names = Field((), description="only these partitions (empty: all)")
    history_days: float = Field(14.0, gt=0, le=365, description=(
        "days of finished jobs (sacct) a history-based base policy (qssf) learns from at start"))


class LogSection(_Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = Field(
        "auto", description="auto: console on a terminal, JSON otherwise (journald, pipes, files)")

    @field_validator("level", "format", mode="before")
    @classmethod
    def _lower(cls, v: object) -> object:
        return v.lower() if isinstance(v, str) else v


class SimSection(_Section):
    """``--backend sim``: a simulated Slurm for users without a cluster."""

    workload: str = Field("testbed", min_length=1, description="trace name or file")
    seed: int = Field(0, ge=0)
    jobs: int = Field(0, ge=0, description="first N jobs of the workload (0: all)")
    speedup: float = Field(60.0, ge=0, description="simulated seconds per wall second (0: no pause)")
    max_cycles: int = Field(0, ge=0, description="stop after N cycles (0: when the workload is done)")
    hours: float = Field(0.0, ge=0, description="stop after this many simulated hours (0: when the workload "
                         "is done)")


class DaemonConfig(BaseSettings):
    """Every key of the daemon. See ``deploy/rltune-daemon.toml.example`` for the commented file."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True,
        case_sensitive=False,
    )

    interval: float = Field(INTERVAL_DEFAULT, ge=INTERVAL_MIN, le=3600, description="seconds between cycles")
    react: float = Field(REACT_DEFAULT, ge=0, le=3600,
                         description="seconds between queue checks (one squeue) between cycles; a job "
                                     "that arrived, started or ended starts a cycle at once "
                                     f"(0: off, else >= {REACT_MIN:g})")
    dry_run: bool = False
    backend: Literal["slurm", "sim"] = "slurm"
    model: str = Field("", description="learned model directory (models/<name>); empty: none")
    base_policy: str = Field(DAEMON_DEFAULT, description="policy when no model is configured or usable "
                             "(multifactor: leave Slurm's order alone)")
    run_model_behind_base: bool = Field(
        False, description="run the model even when its own manifest shows it behind multifactor or its "
                           "base policy on held-out windows (default: fall back to base_policy, say so)")
    state_file: str = Field("", description="SQLite journal of every change (default under StateDirectory; "
                            "a name ending in .json means the .db beside it)")
    recommended_by: str = Field("", description="the `rltune site` results.json this configuration came "
                                "from (--check-config shows its verdict); informational only")
    planner: PlannerSection = PlannerSection()
    exempt: ExemptSection = ExemptSection()
    scope: ScopeSection = ScopeSection()
    metrics: MetricsSection = MetricsSection()
    slurm: SlurmSection = SlurmSection()
    log: LogSection = LogSection()
    sim: SimSection = SimSection()

    @field_validator("react")
    @classmethod
    def _react_floor(cls, v: float) -> float:
        if 0 < v < REACT_MIN:
            raise ValueError(f"must be 0 (off) or at least {REACT_MIN:g} seconds: every check is a squeue "
                             "call to slurmctld")
        return v

    @field_validator("base_policy")
    @classmethod
    def _known_policy(cls, v: str) -> str:
        key = v.strip().lower()
        key = "fcfs" if key == "fifo" else key
        if key not in BASELINES:
            raise ValueError(f"unknown policy {v!r}: choose one of {', '.join(BASELINES)}")
        return key

    @field_validator("model")
    @classmethod
    def _model_path(cls, v: str) -> str:
        v = v.strip()
        return v.removeprefix("rltune:")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = InitSettingsSource(settings_cls, init_kwargs=_TOML_DATA.get() or {})
        return (init_settings, env_settings, toml)

    # ---- derived values --------------------------------------------------------------------

    def resolved_state_file(self) -> Path:
        """The journal: ``state_file`` (``X.json``, written for the JSON file of earlier versions, means
        ``X.db``: ``statefile.journal_path``), else ``$STATE_DIRECTORY/state.db`` (systemd's
        StateDirectory=), else the FHS default."""
        if self.state_file:
            return journal_path(Path(self.state_file))
        sd = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
        return Path(sd) / "state.db" if sd else Path(DEFAULT_STATE_FILE)

    def planner_config(self) -> PlannerConfig:
        p, e, o = self.planner, self.exempt, self.scope
        return PlannerConfig(
            top_k=p.top_k, placement=p.placement, starvation_seconds=p.starvation_seconds,
            starvation_slots=p.starvation_slots, starvation_stretch=p.starvation_stretch,
            starvation_cap_seconds=p.starvation_cap_seconds, starvation_reference=p.starvation_reference,
            exempt_qos=e.qos, exempt_partitions=e.partitions, exempt_users=e.users,
            exempt_accounts=e.accounts, only_users=o.users, only_accounts=o.accounts, reorder=p.reorder,
            next_in_line=p.next_in_line,
        )

    def loop_settings(self) -> dict[str, Any]:
        """Cycle timing and guard as a model's manifest records its rollouts' (compared at start)."""
        return loop_settings(self.planner_config(), self.interval, self.react)

    def effective(self) -> dict[str, Any]:
        """The effective configuration as plain data (for ``--check-config`` and the start log)."""
        data = self.model_dump(mode="json")
        data["state_file"] = str(self.resolved_state_file())
        return data


def _source(loc: tuple[object, ...], data: dict[str, Any], path: Path | None) -> str:
    """Where a bad key came from: the environment variable, else the file, else a default."""
    env = ENV_PREFIX + "__".join(str(p) for p in loc).upper()
    if any(k.upper() == env for k in os.environ):
        return f" (from {env})"
    node: Any = data
    for part in loc:
        if not isinstance(node, dict) or str(part) not in node:
            return ""
        node = node[str(part)]
    return f" (in {path})" if path is not None else ""


def _describe_error(err: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or "(top level)"
    typ = err.get("type", "")
    if typ == "extra_forbidden":
        parent = loc.rsplit(".", 1)[0] if "." in loc else ""
        known = _known_keys(parent)
        return f"{loc}: unknown key (known keys{' in [' + parent + ']' if parent else ''}: {known})"
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    value = err.get("input")
    shown = "" if isinstance(value, dict) or repr(value) in msg else f" (got {value!r})"
    return f"{loc}: {msg}{shown}"


def _known_keys(section: str) -> str:
    model: type[BaseModel] = DaemonConfig
    if section:
        ann = DaemonConfig.model_fields[section].annotation if section in DaemonConfig.model_fields else None
        if not isinstance(ann, type) or not issubclass(ann, BaseModel):
            return ", ".join(DaemonConfig.model_fields)
        model = ann
    return ", ".join(model.model_fields)


def read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def default_config_path() -> Path | None:
    """``$RLTUNE_CONFIG``, else the system file when it exists (so an operator's ``--dry-run`` sees the
    same settings as the service), else None (defaults + environment)."""
    env = os.environ.get("RLTUNE_CONFIG")
    if env:
        return Path(env)
    path = Path(DEFAULT_CONFIG_PATH)
    return path if path.exists() else None


def load_config(path: Path | None, **overrides: Any) -> DaemonConfig:
    """Build the configuration (see module docstring). Raises ``ConfigError`` with the first problem."""
    data = read_toml(path) if path is not None else {}
    token = _TOML_DATA.set(data)
    try:
        return DaemonConfig(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        errors = exc.errors()
        first = dict(errors[0])
        where = _source(tuple(errors[0]["loc"]), data, path)
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConfigError(f"config error: {_describe_error(first)}{where}{more}") from None
    except ValueError as exc:  # pydantic-settings: an env value that is not valid JSON for a list
        raise ConfigError(f"config error: {str(exc).splitlines()[0]}") from None
    finally:
        _TOML_DATA.reset(token)
