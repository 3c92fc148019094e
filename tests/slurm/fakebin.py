"""Fake Slurm client programs for unit tests: a directory of small shell scripts that print canned
outputs (captured from a real 22.05), so the runner/reader/writer run their real subprocess code
without a cluster. Use as ``SlurmRunner(bin_dir=str(fake.path))``."""

from __future__ import annotations

import shlex
from pathlib import Path


class FakeBin:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.log = path / "calls.log"

    def add(self, name: str, stdout: str = "", stderr: str = "", rc: int = 0, sleep: float = 0.0,
            by_arg: dict[str, tuple[str, int]] | None = None) -> None:
        """``by_arg``: ``(stdout, rc)`` chosen by one argv word (e.g. ``{"ping": ("... is UP", 0)}``)."""
        out_file = self.path / f"{name}.out"
        out_file.write_text(stdout)
        err_file = self.path / f"{name}.err"
        err_file.write_text(stderr)
        lines = [
            "#!/bin/bash",
            f'echo "{name} $*" >> {shlex.quote(str(self.log))}',
            f'[ -t 0 ] || cat > {shlex.quote(str(self.path / (name + ".stdin")))}',
        ]
        if sleep:
            lines.append(f"sleep {sleep}")
        for i, (needle, (text, code)) in enumerate((by_arg or {}).items()):
            alt = self.path / f"{name}.{i}.out"
            alt.write_text(text)
            lines.append(f'case " $* " in *" {needle} "*) cat {shlex.quote(str(alt))}; exit {code};; esac')
        lines += [f"cat {shlex.quote(str(out_file))}", f"cat {shlex.quote(str(err_file))} >&2", f"exit {rc}"]
        script = self.path / name
        script.write_text("\n".join(lines) + "\n")
        script.chmod(0o755)

    def stdin_of(self, name: str) -> str:
        return (self.path / f"{name}.stdin").read_text()

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []
