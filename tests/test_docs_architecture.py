"""docs/architecture.md names the files to touch: each one it names must exist, or the how-tos rot."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "rltune_daemon"


def test_every_file_the_architecture_doc_names_exists() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    # `service/applier.py`, `tests/slurm/test_slurm_parse.py`, "src/rltune_daemon/policies/heuristics.py"
    named = set(re.findall(r"[\w./*-]+\.py\b", text))  # cli/*_cmd.py: a glob, matched as one
    assert len(named) > 30
    missing = [p for p in sorted(named)
               if not any(any(base.glob(p)) for base in (ROOT, PACKAGE, PACKAGE.parent))]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"
