"""Run Slurm client commands: argv lists only (never a shell), a timeout on every call, a per-cycle
call budget, and failures classified into ``errors.SlurmError`` subclasses.

The environment handed to the commands is the caller's, minus variables that silently change what
the clients print or which cluster they ask (``SQUEUE_*``, ``SINFO_*``, ``SPRIO_*``,
``SLURM_CLUSTERS``...), plus ``SLURM_TIME_FORMAT=standard`` (timestamps as ``YYYY-MM-DDTHH:MM:SS``,
which the parsers expect) and ``SLURM_CONF`` when one is given.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rltune_daemon.slurm.errors import (
    CallBudgetExceeded,
    CommandTimeout,
    ControllerDown,
    PermissionDenied,
    SlurmCommandError,
)
from rltune_daemon.slurm.pacing import RpcBucket, rpc_cost
from rltune_daemon.slurm.parse import ping_is_up
from rltune_daemon.spans import note

# rc != 0 plus one of these means the controller did not answer (FACTS g).
CONTROLLER_DOWN_MARKERS = (
    "Unable to contact slurm controller",
    "Socket timed out on send/recv operation",
    "Zero Bytes were transmitted or received",
    "Connection refused",
)
# FACTS h: "Access/permission denied for job N" (own job) and "Invalid user id" (another user's).
PERMISSION_MARKERS = ("Access/permission denied", "Invalid user id", "Permission denied")

_DROP_PREFIXES = ("SQUEUE_", "SINFO_", "SPRIO_", "SCONTROL_", "SACCT_")
_DROP_KEYS = ("SLURM_CLUSTERS", "SLURM_TIME_FORMAT", "SLURM_CONF")


def slurm_env(base: Mapping[str, str] | None = None, slurm_conf: str | None = None) -> dict[str, str]:
    """The environment for Slurm clients (see module docstring)."""
    src = os.environ if base is None else base
    env = {k: v for k, v in src.items() if not k.startswith(_DROP_PREFIXES) and k not in _DROP_KEYS}
    env["SLURM_TIME_FORMAT"] = "standard"
    conf = slurm_conf if slurm_conf is not None else src.get("SLURM_CONF")
    if conf:
        env["SLURM_CONF"] = conf
    return env


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class CallStats:
    """Calls and the wall seconds of the last ``keep`` calls per program+subcommand (``squeue``,
    ``scontrol ping``...): bounded, the daemon runs for months."""

    keep: int = 256
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: dict[str, deque[float]] = field(default_factory=dict)

    def add(self, key: str, seconds: float) -> None:
        self.calls[key] += 1
        self.seconds.setdefault(key, deque(maxlen=self.keep)).append(seconds)


def _key(argv: Sequence[str]) -> str:
    prog = os.path.basename(argv[0]) if argv else "?"
    if prog == "scontrol":
        words = [a for a in argv[1:] if not a.startswith("-")]
        return f"scontrol {words[0]}" if words else "scontrol (stdin)"
    return prog


def classify(argv: Sequence[str], rc: int, stdout: str, stderr: str) -> None:
    """Raise the matching ``SlurmError`` for a failed command; return if ``rc == 0``."""
    if rc == 0:
        return
    text = stderr + "\n" + stdout
    if any(m in text for m in CONTROLLER_DOWN_MARKERS) or " is DOWN" in stdout:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ControllerDown(f"slurmctld unreachable ({_key(argv)}: {first})")
    if any(m in text for m in PERMISSION_MARKERS):
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise PermissionDenied(
            f"{_key(argv)}: {first} (run as root, SlurmUser or a Slurm Operator: "
            "sacctmgr modify user NAME set AdminLevel=Operator)"
        )
    raise SlurmCommandError(argv, rc, stderr or stdout)


class SlurmRunner:
    """Runs Slurm clients. ``timeout`` bounds every call; ``max_calls_per_cycle`` bounds the calls of
    one daemon cycle (``begin_cycle`` resets the count; the writer's batches are bounded by its own
    limit instead); ``bin_dir`` prefixes program names. ``rpc_bucket`` (Slurm's RPC rate limit applies
    to us): every call first waits for its RPCs' tokens, calling ``on_wait`` (the watchdog) meanwhile."""

    def __init__(
        self,
        *,
        slurm_conf: str | None = None,
        timeout: float = 20.0,
        ping_timeout: float = 5.0,
        max_calls_per_cycle: int = 16,
        bin_dir: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if timeout <= 0 or ping_timeout <= 0:
            raise ValueError("timeouts must be positive")
        self.timeout = timeout
        self.ping_timeout = ping_timeout
        self.max_calls_per_cycle = max_calls_per_cycle
        self.bin_dir = bin_dir
        self.env = slurm_env(env, slurm_conf)
        self.calls_this_cycle = 0  # every call of the cycle (for the log)
        self._budgeted = 0  # the calls counted against max_calls_per_cycle
        self.stats = CallStats()
        self.rpc_bucket: RpcBucket | None = None
        self.on_wait: Callable[[], None] | None = None
        self.answered_at: float | None = None  # monotonic time slurmctld last answered a read or ping
        self._lock = threading.Lock()  # stats and answered_at, for commands run from several threads

    @property
    def slurm_conf(self) -> str | None:
        return self.env.get("SLURM_CONF")

    def begin_cycle(self) -> None:
        self.calls_this_cycle = 0
        self._budgeted = 0

    def _argv(self, argv: Sequence[str]) -> list[str]:
        if not argv or any(not isinstance(a, str) or "\0" in a for a in argv):
            raise ValueError(f"bad argv {argv!r}")
        prog = os.path.join(self.bin_dir, argv[0]) if self.bin_dir else argv[0]
        return [prog, *argv[1:]]

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout: float | None = None,
        check: bool = True,
        encoding: str = "utf-8",
        budget: bool = True,
        reserved: bool = False,
    ) -> CommandResult:
        """Run one command. ``check``: classify rc != 0 into an exception (else return the result).
        ``encoding="latin-1"``: one character per byte, for outputs framed by byte widths.
        ``budget=False``: not counted against ``max_calls_per_cycle`` (the writer's own batches).
        ``reserved``: ``reserve`` was called for it already (commands run at once from threads: the
        caller reserves them all, in order, before any starts)."""
        if not reserved:
            self.reserve(argv, stdin=stdin, budget=budget)
        full = self._argv(argv)
        limit = self.timeout if timeout is None else timeout
        t0 = time.monotonic()
        try:
            rc, out, err = self._execute(full, stdin, limit, encoding)
        except CommandTimeout:
            with self._lock:
                self.stats.add(_key(argv), time.monotonic() - t0)
            raise
        seconds = time.monotonic() - t0
        note("slurm", seconds, kind=_key(argv), updates=stdin.count("\nupdate ") + stdin.startswith("update ")
             if stdin else 0)
        with self._lock:
            self.stats.add(_key(argv), seconds)
            if rc == 0 and argv[0] in CONTROLLER_READS:
                self.answered_at = time.monotonic()
        result = CommandResult(tuple(full), rc, out, err, seconds)
        if check:
            classify(full, result.rc, out, err)
        return result

    def reserve(self, argv: Sequence[str], *, stdin: str | None = None, budget: bool = True) -> None:
        """Count one call against the cycle's budget (``CallBudgetExceeded`` past it) and wait for its
        RPCs' tokens (``rpc_bucket``): what ``run`` does first. Commands that will run at the same time
        are reserved one after another, so the bucket holds the tokens of all of them at once, as
        slurmctld's own bucket will see their RPCs arrive together."""
        if budget and self._budgeted >= self.max_calls_per_cycle:
            raise CallBudgetExceeded(
                f"more than {self.max_calls_per_cycle} Slurm calls in one cycle (next: {_key(argv)})"
            )
        self._budgeted += budget
        self.calls_this_cycle += 1
        self._argv(argv)  # a bad argv fails here, before any call of a group starts
        if self.rpc_bucket is not None:
            self.rpc_bucket.take(rpc_cost(argv, stdin), self.on_wait)

    def _execute(self, full: Sequence[str], stdin: str | None, limit: float, encoding: str
                 ) -> tuple[int, str, str]:
        """Run ``full`` (argv list, never a shell) in its own session: ``(rc, stdout, stderr)``;
        ``CommandTimeout`` (the process group killed) past ``limit`` seconds."""
        try:
            proc = subprocess.Popen(  # argv list, never a shell
                full,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                text=True,
                encoding=encoding,
                errors="replace",
                start_new_session=True,
            )
        except FileNotFoundError:
            raise SlurmCommandError(
                full, 127, f"{full[0]}: command not found",
                hint="install the slurm-client package (make setup) or set the Slurm bin dir",
            ) from None
        except PermissionError as exc:
            raise SlurmCommandError(full, 126, str(exc)) from None
        try:
            out, err = proc.communicate(stdin, timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise CommandTimeout(full, limit) from None
        return proc.returncode, out, err

    def ping(self) -> bool:
        """True when ``scontrol ping`` reports the primary controller UP. Immediate when the port is
        closed; takes MessageTimeout when slurmctld hangs (FACTS g), bounded by ``ping_timeout``."""
        try:
            res = self.run(["scontrol", "ping"], timeout=self.ping_timeout, check=False)
        except CommandTimeout:
            self.answered_at = None
            return False
        up = res.rc == 0 and ping_is_up(res.stdout)
        self.answered_at = time.monotonic() if up else None
        return up

    def answered_within(self, seconds: float) -> bool:
        """Whether slurmctld answered a read or a ping in the last ``seconds``."""
        return self.answered_at is not None and time.monotonic() - self.answered_at <= seconds

    def require_up(self) -> None:
        """Raise ``ControllerDown`` unless ``ping()``."""
        if not self.ping():
            raise ControllerDown("slurmctld unreachable (scontrol ping: DOWN)")


# Commands answered by slurmctld itself (sacct is slurmdbd's): a success proves the controller is up.
CONTROLLER_READS = frozenset({"squeue", "sinfo", "sprio"})


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill the command and anything it started (its own session), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=5)
