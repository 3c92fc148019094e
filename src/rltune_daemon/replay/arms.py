"""Arm specs of a replay: ``multifactor`` (Slurm alone, no daemon), ``daemon:<baseline>`` (the daemon
with that base policy and no model) and ``rltune:<model dir>`` (the daemon with a model). A
``/nohints`` suffix runs the same daemon with ``[planner] placement = false``: SiteFactors only, no
ExcNodeList hints, which is how a replay measures what the placement hints change."""

from __future__ import annotations

from dataclasses import dataclass

from rltune_daemon.errors import UserError
from rltune_daemon.policies import BASELINES

NOHINTS = "/nohints"
REFERENCE = "multifactor"


@dataclass(frozen=True)
class Arm:
    spec: str  # as the user wrote it (the key in results.json)
    kind: str  # "multifactor", "daemon" or "rltune"
    policy: str  # baseline name (daemon), model directory (rltune), "multifactor"
    hints: bool = True

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
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("daemon", "rltune") or not rest:
        raise UserError(f"arm {spec!r}: expected multifactor, daemon:<baseline> or rltune:<model dir>"
                        f" (optionally ending in {NOHINTS})")
    hints = not rest.endswith(NOHINTS)
    name = rest.removesuffix(NOHINTS) if not hints else rest
    if kind == "daemon" and name not in BASELINES:
        raise UserError(f"arm {spec!r}: unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
    return Arm(text, kind, name, hints)


def parse_arms(text: str) -> tuple[Arm, ...]:
    arms = tuple(parse_arm(s) for s in text.split(",") if s.strip())
    if not arms:
        raise UserError("--arms: name at least one arm (e.g. multifactor,daemon:sjf)")
    specs = [a.spec for a in arms]
    if len(set(specs)) != len(specs):
        raise UserError(f"--arms: an arm is named twice ({text})")
    return arms
