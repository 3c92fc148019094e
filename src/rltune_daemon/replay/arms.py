"""Arm specs of a replay: ``multifactor`` (Slurm alone, no daemon), ``default`` (the daemon with no
configuration), ``daemon:<baseline>`` (the daemon with that base policy and no model) and
``rltune:<model dir>`` (the daemon with a model). A ``/nohints`` suffix runs the same daemon with
``[planner] placement = false``: SiteFactors only, no ExcNodeList hints, which is how a replay measures
what the placement hints change. A ``/queue`` suffix runs it with ``[planner] reorder = "queue"``: the
policy reorders every job, not only jobs of one size class among themselves, which is how a replay
measures who pays when it does."""

from __future__ import annotations

from dataclasses import dataclass

from rltune_daemon.errors import UserError
from rltune_daemon.planner.config import REORDER_DEFAULT
from rltune_daemon.policies import BASELINES
from rltune_daemon.policies.registry import DAEMON_DEFAULT

NOHINTS = "/nohints"
QUEUE = "/queue"
REFERENCE = "multifactor"
DEFAULT = "default"


@dataclass(frozen=True)
class Arm:
    spec: str  # as the user wrote it (the key in results.json)
    kind: str  # "multifactor", "daemon" or "rltune"
    policy: str  # baseline name (daemon), model directory (rltune), "multifactor"
    hints: bool = True
    reorder: str = REORDER_DEFAULT

    @property
    def uses_daemon(self) -> bool:
        return self.kind != "multifactor"

    @property
    def sim_spec(self) -> str:
        """The spec ``evaluate.runner.make_controller`` takes for the simulated counterpart."""
        return f"{self.kind}:{self.policy}" if self.uses_daemon else self.policy


def parse_arm(spec: str) -> Arm:
    text = spec.strip()
    if text == REFERENCE:
        return Arm(text, "multifactor", "multifactor", hints=False)
    if text == DEFAULT:
        return Arm(text, "daemon", DAEMON_DEFAULT)
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("daemon", "rltune") or not rest:
        raise UserError(f"arm {spec!r}: expected multifactor, default, daemon:<baseline> or rltune:<model "
                        f"dir> (optionally ending in {NOHINTS} and/or {QUEUE})")
    flags = set()
    while rest.endswith((NOHINTS, QUEUE)):
        flag = NOHINTS if rest.endswith(NOHINTS) else QUEUE
        flags.add(flag)
        rest = rest.removesuffix(flag)
    if kind == "daemon" and rest not in BASELINES:
        raise UserError(f"arm {spec!r}: unknown baseline {rest!r}; choose one of {', '.join(BASELINES)}")
    return Arm(text, kind, rest, NOHINTS not in flags, "queue" if QUEUE in flags else REORDER_DEFAULT)


def parse_arms(text: str) -> tuple[Arm, ...]:
    arms = tuple(parse_arm(s) for s in text.split(",") if s.strip())
    if not arms:
        raise UserError("--arms: name at least one arm (e.g. multifactor,daemon:sjf)")
    specs = [a.spec for a in arms]
    if len(set(specs)) != len(specs):
        raise UserError(f"--arms: an arm is named twice ({text})")
    return arms
