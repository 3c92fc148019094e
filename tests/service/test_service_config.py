"""Configuration: TOML + RLTUNE_ environment, precedence, one-line errors that name the key, and the
``--check-config`` / bad-input behaviour of the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rltune_daemon.service.config import ConfigError, load_config

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "deploy" / "rltune-daemon.toml.example"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("RLTUNE_") or k == "STATE_DIRECTORY":
            monkeypatch.delenv(k)


def test_defaults_file_and_env_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = load_config(None)
    assert (d.interval, d.backend, d.base_policy, d.dry_run) == (60.0, "slurm", "multifactor", False)
    # the policy an admin sets is reordered to protect the large jobs: within size classes, next in line
    # kept, guard by Slurm's own order
    assert (d.planner.reorder, d.planner.next_in_line, d.planner.starvation_reference) == (
        "size-class", 3, "priority")
    assert (d.metrics.bind, d.metrics.port, d.planner.hint_cycles) == ("127.0.0.1", 9810, 2)
    assert str(d.resolved_state_file()) == "/var/lib/rltune-daemon/state.db"
    cfg = tmp_path / "c.toml"
    cfg.write_text('interval = 30\nbase_policy = "FCFS"\n[planner]\ntop_k = 4\n[exempt]\nusers = ["ops"]\n')
    c = load_config(cfg)
    assert (c.interval, c.base_policy, c.planner.top_k, c.exempt.users) == (30.0, "fcfs", 4, ("ops",))
    monkeypatch.setenv("RLTUNE_PLANNER__TOP_K", "9")
    monkeypatch.setenv("RLTUNE_EXEMPT__QOS", "urgent, sla")
    monkeypatch.setenv("RLTUNE_EXEMPT__ACCOUNTS", '["a", "b"]')
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/x")
    c = load_config(cfg, dry_run=True)
    assert c.planner.top_k == 9 and c.exempt.qos == ("urgent", "sla") and c.exempt.accounts == ("a", "b")
    assert c.dry_run and str(c.resolved_state_file()) == "/var/lib/x/state.db"
    pc = c.planner_config()
    assert pc.top_k == 9 and pc.exempt_users == ("ops",) and pc.exempt_qos == ("urgent", "sla")
    assert (pc.starvation_reference, pc.reorder, pc.next_in_line) == ("priority", "size-class", 3)
    monkeypatch.setenv("RLTUNE_PLANNER__STARVATION_REFERENCE", "both")
    monkeypatch.setenv("RLTUNE_PLANNER__REORDER", "queue")
    monkeypatch.setenv("RLTUNE_PLANNER__NEXT_IN_LINE", "0")
    pc = load_config(cfg).planner_config()
    assert (pc.starvation_reference, pc.reorder, pc.next_in_line) == ("both", "queue", 0)


@pytest.mark.parametrize(("text", "env", "needle"), [
    ("[planner]\ntopk = 3\n", {}, "planner.topk: unknown key (known keys in [planner]: top_k"),
    ('backend = "pbs"\n', {}, "backend: Input should be 'slurm' or 'sim'"),
    ('base_policy = "magic"\n', {}, "base_policy: unknown policy 'magic': choose one of fcfs, sjf"),
    ("interval = -1\n", {}, "interval: Input should be greater than or equal to 5"),
    ("interval = 0.001\n", {}, "interval: Input should be greater than or equal to 5"),
    ("react = 0.2\n", {}, "react: must be 0 (off) or at least 1 seconds"),
    ("[slurm]\nmax_updates_per_cycle = 0\n", {}, "slurm.max_updates_per_cycle: Input should be greater"),
    ("[planner]\nhint_cycles = 0\n", {}, "planner.hint_cycles: Input should be greater than or equal to 1"),
    ('[planner]\nstarvation_reference = "fifo"\n', {},
     "planner.starvation_reference: Input should be 'priority', 'submit' or 'both'"),
    ('[log]\nlevel = "loud"\n', {}, "log.level: Input should be 'debug', 'info', 'warning' or 'error'"),
    ("[metrics]\nport = 70000\n", {}, "metrics.port: Input should be less than or equal to 65535"),
    ("", {"RLTUNE_PLANNER__PLACER": "cplex"}, "planner.placer: Input should be 'milp' or 'greedy' "
                                             "(got 'cplex') (from RLTUNE_PLANNER__PLACER)"),
    ("", {"RLTUNE_SLURM__BOGUS": "1"}, "slurm.bogus: unknown key"),
    ("interval = \n", {}, "invalid TOML"),
])
def test_errors_are_one_line_and_name_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                                              env: dict[str, str], needle: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_example_file_is_valid_and_complete() -> None:
    c = load_config(EXAMPLE)
    text = EXAMPLE.read_text()
    for key in ("interval", "dry_run", "backend", "model", "base_policy", "state_file", "top_k", "placement",
                "hint_cycles", "starvation_seconds", "starvation_stretch", "starvation_cap_seconds",
                "starvation_reference",
                "qos", "partitions", "users", "accounts", "bind", "port",
                "conf", "timeout", "level", "format"):
        assert f"{key} =" in text or f"# {key} =" in text, key
    assert c.metrics.bind == "127.0.0.1"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")} | (env or {})
    return subprocess.run([sys.executable, "-m", "rltune_daemon.cli.daemon", *args], capture_output=True,
                          text=True, timeout=120, env=full_env, check=False)


def test_check_config_prints_the_effective_config(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'base_policy = "wfp3"\nstate_file = "{tmp_path}/s.json"\nmodel = "{tmp_path}/no-model"\n')
    res = _cli("--config", str(cfg), "--check-config", env={"RLTUNE_PLANNER__TOP_K": "5"})
    assert res.returncode == 0, res.stderr
    assert '"top_k": 5' in res.stdout and '"base_policy": "wfp3"' in res.stdout
    assert "policy: FALLBACK to wfp3" in res.stdout and "config OK" in res.stdout
    assert f"state file: {tmp_path}/s.db (writable)" in res.stdout
    assert "history:" not in res.stdout  # wfp3 learns nothing from sacct


def test_check_config_says_where_qssf_history_comes_from(tmp_path: Path) -> None:
    res = _cli("--check-config", env={"RLTUNE_BASE_POLICY": "qssf", "RLTUNE_SLURM__HISTORY_DAYS": "30",
                                      "RLTUNE_STATE_FILE": f"{tmp_path}/s.json"})
    assert res.returncode == 0, res.stderr
    assert "history: qssf learns finished runs from sacct (last 30 days, needs slurmdbd" in res.stdout
    bad = _cli("--check-config", env={"RLTUNE_SLURM__HISTORY_DAYS": "0"})
    assert bad.returncode == 2 and "history_days" in bad.stderr and "Traceback" not in bad.stderr


def test_bad_config_is_one_line_exit_2_and_nothing_runs(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[exempt]\nuser = ['bob']\n")
    for extra in ((), ("--check-config",), ("--restore",)):
        res = _cli("--config", str(cfg), *extra)
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr.count("\n") == 1 and "exempt.user: unknown key" in res.stderr
        assert "Traceback" not in res.stderr
