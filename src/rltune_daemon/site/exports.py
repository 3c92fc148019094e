"""What ``rltune site`` reads from a cluster: four read-only Slurm commands, run here or by an admin
by hand and saved in a folder (``--export DIR`` writes exactly what was read, ``--from DIR`` reads it
back on a machine away from the cluster).

    sacct -a -X -P -S <since> -E now -o <SACCT_FIELDS>   > sacct.txt
    scontrol show config                                   > config.txt
    scontrol -o show node                                  > nodes.txt
    scontrol -o show partition                             > partitions.txt

The commands run through the daemon's ``SlurmRunner``: argv lists, never a shell, a timeout on each, and
a call budget of the four, so a site check cannot flood slurmctld or slurmdbd.
"""

from __future__ import annotations

import getpass
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rltune_daemon.errors import UserError
from rltune_daemon.policies.slurm_priority import parse_config
from rltune_daemon.slurm.errors import SlurmCommandError
from rltune_daemon.slurm.history import sacct_time
from rltune_daemon.slurm.runner import SlurmRunner

SACCT_FIELDS = "JobID,User,Account,Partition,QOS,Submit,Start,End,State,ReqTRES,AllocTRES,Timelimit,NodeList"
FILES = {"sacct": "sacct.txt", "config": "config.txt", "nodes": "nodes.txt", "partitions": "partitions.txt"}
SACCT_TIMEOUT_S = 900.0  # a month of a busy cluster is one long slurmdbd query
READ_TIMEOUT_S = 60.0
ADMIN_LEVELS = ("operator", "administrator")


def sacct_argv(since: float) -> list[str]:
    """Every user's allocations (``-X``: no steps) submitted since ``since``, with a header line."""
    return ["sacct", "-a", "-X", "-P", "-S", sacct_time(since), "-E", "now", "-o", SACCT_FIELDS]


COMMANDS = {"config": ["scontrol", "show", "config"], "nodes": ["scontrol", "-o", "show", "node"],
            "partitions": ["scontrol", "-o", "show", "partition"]}


def by_hand(days: float) -> list[str]:
    """The four command lines an admin runs to make a ``--from`` folder (docs/site.md)."""
    since = f"now-{int(days)}days"
    return [f"sacct -a -X -P -S {since} -E now -o {SACCT_FIELDS} > sacct.txt",
            "scontrol show config > config.txt", "scontrol -o show node > nodes.txt",
            "scontrol -o show partition > partitions.txt"]


@dataclass(frozen=True)
class Exports:
    """The four outputs as text, and where they came from (``live`` or the folder)."""

    sacct: str
    config: str
    nodes: str
    partitions: str
    source: str

    def texts(self) -> dict[str, str]:
        return {"sacct": self.sacct, "config": self.config, "nodes": self.nodes,
                "partitions": self.partitions}


def read_live(days: float, slurm_conf: str | None = None, say: ProgressSay | None = None) -> Exports:
    """Run the four commands against the cluster this machine's Slurm clients talk to."""
    runner = SlurmRunner(slurm_conf=slurm_conf, timeout=READ_TIMEOUT_S, max_calls_per_cycle=5)
    runner.begin_cycle()
    texts: dict[str, str] = {}
    for key, argv in COMMANDS.items():
        _say(say, f"reading {' '.join(argv)}")
        texts[key] = runner.run(argv).stdout
    check_can_read_all(texts["config"], runner)
    _say(say, f"reading {days:g} days of accounting (sacct)")
    try:
        texts["sacct"] = runner.run(sacct_argv(time.time() - days * 86400.0), timeout=SACCT_TIMEOUT_S).stdout
    except SlurmCommandError as exc:
        raise UserError(sacct_problem(str(exc))) from None
    return Exports(texts["sacct"], texts["config"], texts["nodes"], texts["partitions"], "live")


def sacct_problem(message: str) -> str:
    """A failed sacct, said as what to do about it."""
    low = message.lower()
    if "accounting storage is disabled" in low:
        return ("sacct: this cluster keeps no job accounting (AccountingStorageType=none); rltune site needs "
                "slurmdbd's history of the jobs that ran")
    if "permission" in low or ("access" in low and "denied" in low):
        return ("sacct: permission denied reading other users' jobs; run as root, SlurmUser or a user with "
                "AdminLevel=Operator (sacctmgr modify user NAME set AdminLevel=Operator)")
    return f"sacct failed: {message}"


def check_can_read_all(config_text: str, runner: SlurmRunner | None, user: str | None = None,
                       uid: int | None = None) -> None:
    """With ``PrivateData=jobs`` (or ``usage``) sacct silently lists only the caller's own jobs: a
    history of one user would judge the cluster on a sliver of it. Root, SlurmUser and Slurm Operators
    and Administrators see every job; anyone else is told which permission is missing."""
    cfg = parse_config(config_text)
    private = {p.strip().lower() for p in cfg.get("PrivateData", "").split(",")}
    if not private & {"jobs", "usage", "accounts"}:
        return
    uid = os.geteuid() if uid is None else uid
    user = user or getpass.getuser()
    if uid == 0 or user == cfg.get("SlurmUser", "").split("(")[0]:
        return
    level = ""
    if runner is not None:
        res = runner.run(["sacctmgr", "-n", "-P", "show", "user", user, "format=AdminLevel"], check=False)
        level = res.stdout.strip().lower() if res.rc == 0 else ""
    if level not in ADMIN_LEVELS:
        raise UserError(f"PrivateData={cfg.get('PrivateData')} hides other users' jobs from {user}: run as "
                        "root, SlurmUser or a user with AdminLevel=Operator (sacctmgr modify user "
                        f"{user} set AdminLevel=Operator)")


def read_dir(folder: Path) -> Exports:
    """The four files of a ``--export`` folder (or an admin's own captures under the same names)."""
    if not folder.is_dir():
        raise UserError(f"--from {folder}: no such folder; make one with `rltune site --export {folder}` "
                        "or the four commands in docs/site.md")
    texts: dict[str, str] = {}
    for key, name in FILES.items():
        path = folder / name
        try:
            texts[key] = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            how = dict(zip(FILES, by_hand(30), strict=True))[key]
            raise UserError(f"{path}: missing; save it with: {how}") from None
        except OSError as exc:
            raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return Exports(texts["sacct"], texts["config"], texts["nodes"], texts["partitions"], str(folder))


def write_dir(exports: Exports, folder: Path) -> list[Path]:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for key, text in exports.texts().items():
            path = folder / FILES[key]
            path.write_text(text, encoding="utf-8")
            paths.append(path)
    except OSError as exc:
        raise UserError(f"--export {folder}: cannot write ({exc.strerror or exc})") from None
    return paths


class ProgressSay:
    """Progress lines: on a terminal they overwrite each other, elsewhere each is its own line."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.t0 = time.monotonic()

    def __call__(self, line: str) -> None:
        text = f"[{time.monotonic() - self.t0:6.0f} s] {line}"
        write = self.stream.write
        write(f"\r\033[K{text}" if self.tty else f"{text}\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty:
            self.stream.write("\n")


def _say(say: ProgressSay | None, line: str) -> None:
    if say is not None:
        say(line)
