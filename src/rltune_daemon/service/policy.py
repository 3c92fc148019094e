"""Which policy and placer the daemon uses, and the loud fallbacks when the preferred one is missing.

The learned actor (``model = "models/<name>"``) is loaded with ``policies.learned.load_learned``. A
missing, corrupt or schema-mismatched model (a one-line ``UserError``) or a build without the learned
module falls back to ``base_policy``; a model whose own manifest shows it behind multifactor or its base
policy on held-out windows (``policies.standing``) runs what the record shows ahead of it instead, unless
``run_model_behind_base = true``. Either is said in the log, in ``rltune_model_info`` and
``rltune_model_fallback`` and in the dry-run banner. A model that fails while scoring is dropped for the
rest of the run the same way. The MILP placer falls back to greedy (Slurm's own best fit) per call,
counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from rltune_daemon.domain.arrays import I64
from rltune_daemon.errors import UserError
from rltune_daemon.placement.context import FALLBACK_REASONS, PlacementContext, PlacementResult, Placer
from rltune_daemon.placement.greedy import greedy_placer
from rltune_daemon.policies.base import Policy
from rltune_daemon.policies.multifactor import leaves_slurm_order
from rltune_daemon.policies.registry import DAEMON_DEFAULT, make_policy
from rltune_daemon.policies.standing import standing
from rltune_daemon.spans import span


@dataclass
class PolicyChoice:
    """The policy in use. ``fallback`` is "" when it is the configured one, else why it is not."""

    policy: Policy
    model: str = ""
    schema_hash: str = ""
    fallback: str = ""
    identity: dict[str, Any] = field(default_factory=dict)  # the actor file's hash and training run
    behind_base: str = ""  # why the model's own held-out record puts it behind (policies.standing)
    fallback_kind: str = ""  # "" | one of FALLBACK_KINDS: the metric's label

    @property
    def described(self) -> str:
        """One line for ``--check-config`` and the log: which model file exactly, or which heuristic."""
        if self.model and self.fallback:
            return self.policy.name
        if not self.model:
            default = ": the daemon's default" if self.policy.name == DAEMON_DEFAULT else ""
            return f"{self.policy.name} (no model configured{default})"
        i = self.identity
        return (f"model {self.model} (actor sha256 {i.get('actor_sha256', '?')}, trained on "
                f"{i.get('trace', '?')} against {i.get('base_policy', '?')}, iteration "
                f"{i.get('best_iteration', '?')} of {i.get('iterations', '?')})")

    @property
    def label(self) -> str:
        return self.model or self.policy.name

    @property
    def leave_order(self) -> bool:
        """``multifactor`` means "Slurm's own order": write no SiteFactor (undo only ours)."""
        return leaves_slurm_order(self.policy.name)


# The daemon settings a model's manifest records for its rollouts (``rollouts``) that the start compares
# with its own. Queue checks (``react``) are not among them: training skips them for speed unless asked
# (``react`` in rltune train's config), and models trained that way are evaluated, like the daemon runs,
# with them.
TRAINED_UNDER = ("interval", "starvation_reference", "starvation_seconds", "starvation_stretch",
                 "starvation_cap_seconds", "starvation_slots", "reorder", "next_in_line")


def trained_under(identity: Mapping[str, Any], deployed: Mapping[str, Any]) -> str:
    """The settings this daemon runs (``deployed``, ``planner.config.loop_settings``) that differ from
    those the model's rollouts ran under, as one line; "" when they agree or the manifest predates
    recording them. A model learns the order that pays off under its training's guard and cycle; the
    daemon still runs it, and says so at start and in ``--check-config``."""
    rollouts = identity.get("rollouts")
    if not isinstance(rollouts, Mapping):
        return ""
    changed = [f"{k} = {deployed[k]!r} (trained under {rollouts[k]!r})" for k in TRAINED_UNDER
               if k in rollouts and k in deployed and rollouts[k] != deployed[k]]
    if not changed:
        return ""
    ref = deployed.get("starvation_reference")
    retrain = (f" or train it under {ref!r} (rltune train --config with starvation_reference = {ref!r})"
               if rollouts.get("starvation_reference", ref) != ref else "")
    return (f"this daemon runs {', '.join(changed)}: the model learned its order under its training "
            "settings; compare it with its base policy under yours (rltune evaluate --config takes the "
            f"daemon's interval and starvation_* keys; docs/operations.md, 'Model or base policy?'){retrain}")


# why a configured model is not the one deciding: it could not be loaded, its own held-out record puts
# it behind multifactor or its base policy, or it failed while scoring
FALLBACK_KINDS = ("unusable", "behind_base", "failed")


def choose_policy(model: str, base_policy: str, run_behind: bool = False) -> PolicyChoice:
    """The learned model when configured, loadable and not behind on its own held-out record (unless
    ``run_behind``), else ``base_policy`` (see module docstring)."""
    base = make_policy(base_policy)
    if not model:
        return PolicyChoice(base)
    chosen, instead = _load(model, base)
    if chosen.fallback or not chosen.behind_base or run_behind:
        return chosen
    # what the record shows ahead of the model, not base_policy: that may be the very policy it lost to
    return PolicyChoice(make_policy(instead), model, "", f"{chosen.behind_base}; using {instead} (set "
                        "run_model_behind_base = true to run the model anyway)", chosen.identity,
                        fallback_kind="behind_base")


def _load(model: str, base: Policy) -> tuple[PolicyChoice, str]:
    """The model's choice and, when its held-out record puts it behind, the policy to run instead."""
    try:  # lazily: the learned policy loads torch, which a daemon running a heuristic never needs
        from rltune_daemon.policies.learned import load_learned, model_identity
    except ModuleNotFoundError as exc:  # a broken install must not stop the daemon: run the base policy
        return PolicyChoice(base, model, "", f"cannot load the learned policy: missing module {exc.name}; "
                            f"using {base.name}", fallback_kind="unusable"), ""
    try:
        policy = load_learned(Path(model))
    except UserError as err:
        return PolicyChoice(base, model, "", f"{err}; using {base.name}", fallback_kind="unusable"), ""
    except (OSError, ValueError, RuntimeError) as exc:  # a loader bug must not stop the daemon
        return PolicyChoice(base, model, "", f"model {model}: {type(exc).__name__}: {exc}; using {base.name}",
                            fallback_kind="unusable"), ""
    schema = str(getattr(policy, "schema_hash", "") or "")
    identity = model_identity(Path(model))
    manifest = cast(dict[str, Any], getattr(policy, "manifest", {}))
    where = standing(manifest)
    return PolicyChoice(policy, model, schema, identity=identity, behind_base=where.reason), where.instead


PLACER_FALLBACK_REASONS = (*FALLBACK_REASONS, "unavailable")


class CountingPlacer:
    """The configured placer, with the MILP's fallbacks to greedy counted by reason (``fallbacks``, keys
    from ``PLACER_FALLBACK_REASONS``) and the last one's text kept (``last_fallback``, for the log).
    ``milp`` unavailable (module not built) counts every call as ``unavailable``."""

    def __init__(self, kind: str, time_limit: float) -> None:
        self.kind = kind
        self.fallbacks: Counter[str] = Counter()
        self.last_fallback = ""
        self.unavailable = ""
        self.inner: Placer = greedy_placer
        if kind == "milp":
            try:  # lazily: PuLP is loaded only when the MILP places
                from rltune_daemon.placement.milp import make_milp_placer
            except ModuleNotFoundError as exc:  # no PuLP: greedy placement, counted and logged
                self.unavailable = f"MILP placer unavailable (no module {exc.name}); using greedy"
            else:
                # a live decision has a deadline: CBC counts wall-clock time (the simulator counts CPU)
                self.inner = make_milp_placer(time_limit=time_limit, time_mode="elapsed")

    def __call__(self, ctx: PlacementContext, rows: I64) -> PlacementResult:
        with span("milp"):
            result = self.inner(ctx, rows)
        if self.kind == "milp" and (self.unavailable or result.fallback or result.solver != "milp"):
            reason = "unavailable" if self.unavailable else result.reason
            self.fallbacks[reason if reason in PLACER_FALLBACK_REASONS else "solver-error"] += 1
            self.last_fallback = self.unavailable or result.fallback or f"solver {result.solver}"
        return result
