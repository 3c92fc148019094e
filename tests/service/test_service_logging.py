"""The log's format: ``auto`` (the default) is human-readable on a terminal and JSON lines anywhere else
(journald, pipes, files); ``json`` and ``console`` are taken as set."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from rltune_daemon.service.config import ConfigError, load_config
from rltune_daemon.service.logging import choose_format, configure, get_logger


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Closed(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


@pytest.mark.parametrize(("fmt", "stream", "chosen"), [
    ("auto", _Terminal(), "console"),
    ("auto", io.StringIO(), "json"),
    ("auto", _Closed(), "json"),
    ("json", _Terminal(), "json"),
    ("console", io.StringIO(), "console"),
])
def test_choose_format(fmt: str, stream: io.StringIO, chosen: str) -> None:
    assert choose_format(fmt, stream) == chosen


def test_auto_renders_json_off_a_terminal_and_text_on_one() -> None:
    try:
        piped = io.StringIO()
        configure("info", "auto", piped)
        get_logger().info("cycle", changed=3)
        assert json.loads(piped.getvalue())["changed"] == 3
        tty = _Terminal()
        configure("info", "auto", tty)
        get_logger().info("cycle", changed=3)
        line = tty.getvalue()
        assert "cycle" in line and "changed=3" in line and not line.lstrip().startswith("{")
    finally:
        configure()


def test_config_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLTUNE_LOG__FORMAT", raising=False)
    assert load_config(None).log.format == "auto"
    cfg = tmp_path / "c.toml"
    cfg.write_text('[log]\nformat = "JSON"\n')
    assert load_config(cfg).log.format == "json"
    monkeypatch.setenv("RLTUNE_LOG__FORMAT", "console")
    assert load_config(None).log.format == "console"
    cfg.write_text('[log]\nformat = "text"\n')
    monkeypatch.delenv("RLTUNE_LOG__FORMAT")
    with pytest.raises(ConfigError, match=r"log\.format"):
        load_config(cfg)
