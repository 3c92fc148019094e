"""Fault-injecting wrappers around the REAL Slurm clients, for the daemon's ``[slurm] bin_dir``.

Each wrapper runs the real program unless a fault is armed for it (``FaultBin.arm``); then it prints
garbage, cuts the real output, prints nothing with exit 0, fails, hangs past the daemon's timeout, or
SIGKILLs the daemon itself (its parent) at that point of the cycle. The cluster, its jobs and every
write that does go through are real. Keys: ``squeue-jobs`` (the ``-o`` record read), ``squeue-tres``
(``-O``), ``squeue-check`` (the ``%A|%T|`` queue check and confirmations), ``sprio``, ``sinfo``,
``ping`` (``scontrol ping``), ``update`` (``scontrol`` reading update lines), ``config``
(``scontrol show config``), ``sacct``.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

PROGRAMS = ("squeue", "sprio", "sinfo", "scontrol", "sacct", "sacctmgr")
MODES = ("garbage", "truncate", "drop", "empty", "fail", "slow", "kill", "kill-mid", "kill-second",
         "partial", "stop-ctld")

_SCRIPT = r'''#!/bin/bash
# fault wrapper around the real @PROG@ (tests/service/faultbin.py)
real=@REAL@
dir=@DIR@
args=" $* "
case "@PROG@" in
  squeue) if [[ $args == *" -O "* ]]; then key=squeue-tres
          elif [[ $args == *"%A|%T|"* ]]; then key=squeue-check
          else key=squeue-jobs; fi;;
  scontrol) if [[ $args == *" ping "* ]]; then key=ping
            elif [[ $args == *" show config "* ]]; then key=config
            elif [ $# -eq 0 ]; then key=update
            else key=scontrol; fi;;
  *) key=@PROG@;;
esac
mode=""
[ -f "$dir/$key.mode" ] && mode=$(cat "$dir/$key.mode")
n=0
if [ -n "$mode" ]; then
  n=$(( $(cat "$dir/$key.count" 2>/dev/null || echo 0) + 1 )); echo $n > "$dir/$key.count"
fi
tmp=$(mktemp); trap 'rm -f "$tmp" "$tmp.in"' EXIT
case "$mode" in
  garbage) printf 'garbage|\001|%s\n%s\n' "$key" "$(head -c 200 /dev/urandom | base64 -w0)"; exit 0;;
  empty) [ -t 0 ] || cat > /dev/null; exit 0;;
  fail) echo "$key: error: injected failure" >&2; exit 1;;
  slow) sleep 30; exec "$real" "$@";;
  truncate) "$real" "$@" > "$tmp"; rc=$?; size=$(stat -c %s "$tmp")
            head -c $(( size > 10 ? size - 10 : 0 )) "$tmp"; exit $rc;;
  drop) "$real" "$@" > "$tmp"; rc=$?; head -n 1 "$tmp"; exit $rc;;
  kill) kill -9 $PPID; exit 1;;
  kill-mid) cat > "$tmp.in"; half=$(( ($(grep -c '^update' "$tmp.in") + 1) / 2 ))
            { grep '^update' "$tmp.in" | head -n $half; echo quit; } | "$real" > /dev/null 2>&1
            kill -9 $PPID; exit 1;;
  kill-second) if [ "$n" -ge 2 ]; then kill -9 $PPID; exit 1; fi; exec "$real" "$@";;
  partial) cat > "$tmp.in"; lines=$(grep -c '^update' "$tmp.in")
           { grep '^update' "$tmp.in" | head -n $(( lines / 2 )); echo quit; } | "$real" > /dev/null 2>&1
           exit 0;;
  stop-ctld) kill -TERM "$(cat @PIDFILE@)"; sleep 0.5; exec "$real" "$@";;
  *) exec "$real" "$@";;
esac
'''


class FaultBin:
    """A ``bin_dir`` of wrappers (see module docstring); ``pidfile``: slurmctld's, for ``stop-ctld``."""

    def __init__(self, path: Path, pidfile: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        for prog in PROGRAMS:
            real = shutil.which(prog) or str(Path("/usr/bin", prog))
            script = path / prog
            text = _SCRIPT
            for key, value in (("@PROG@", prog), ("@REAL@", shlex.quote(real)),
                               ("@DIR@", shlex.quote(str(path))), ("@PIDFILE@", shlex.quote(str(pidfile)))):
                text = text.replace(key, value)
            script.write_text(text)
            script.chmod(0o755)

    def arm(self, key: str, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown fault mode {mode!r}")
        (self.path / f"{key}.count").unlink(missing_ok=True)
        (self.path / f"{key}.mode").write_text(mode)

    def disarm(self) -> None:
        for f in self.path.glob("*.mode"):
            f.unlink()
        for f in self.path.glob("*.count"):
            f.unlink()

    def hits(self, key: str) -> int:
        f = self.path / f"{key}.count"
        return int(f.read_text()) if f.exists() else 0
