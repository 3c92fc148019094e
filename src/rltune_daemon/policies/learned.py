"""The learned policy: a TorchScript actor plus its manifest, scoring jobs from the feature schema.

``load_learned(path)`` refuses a missing, corrupt or mismatched model with a one-line ``UserError``
(callers fall back to their base policy). Queues are ranked in chunks of ``MAX_QUEUE`` jobs by age, as
the paper bounds its queue to 256: the oldest 256 are ranked by the actor, then the next 256, and so
on, so a huge backlog can never bury old jobs under a stream of new favourites.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rltune_daemon import features
from rltune_daemon.domain.arrays import F64, JobTable
from rltune_daemon.domain.history import FinishedRuns, RunHistory
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.errors import UserError
from rltune_daemon.features import naive
from rltune_daemon.features.naive import naive_features
from rltune_daemon.features.schema import new_history
from rltune_daemon.policies.base import Policy
from rltune_daemon.spans import span

MAX_QUEUE = 256
MODEL_FILE = "actor.pt"
MANIFEST_FILE = "manifest.json"


def feature_matrix(view: QueueView, mode: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Actor inputs for ``mode``: ``sampled`` (paper: engineered features, heuristic sampling to 8)
    or ``naive`` (the raw visible job features only; the paper's naive-RLTune ablation)."""
    if mode == "sampled":
        return features.actor_features(view)
    if mode == "naive":
        return naive_features(view)
    raise UserError(f"unknown feature mode {mode!r}: expected 'sampled' or 'naive'")


def chunk_rank(view: QueueView) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Chunk number of each pending job: 0 for the oldest MAX_QUEUE, 1 for the next, ..."""
    return view.age_places // MAX_QUEUE


@dataclass
class LearnedPolicy(Policy):
    """Scores = -(actor output), chunked by age; deterministic. A model whose inputs include the
    ``hist_time`` slot keeps a run history (fed like QSSF's: the trace's past, finished jobs, sacct)."""

    actor: Any  # torch.jit.ScriptModule
    manifest: dict[str, Any]
    path: str = ""
    history: RunHistory = field(default_factory=new_history)

    name = "rltune"

    def __post_init__(self) -> None:
        self.learns_history = self.feature_mode == "sampled"

    @property
    def runs_learned(self) -> int:
        return self.history.runs if self.learns_history else 0

    def learn_runs(self, runs: FinishedRuns) -> None:
        if self.learns_history:
            self.history.learn_runs(runs)

    def observe_finish(self, table: JobTable, row: int, runtime: float) -> None:
        if self.learns_history:
            self.history.learn_row(table, row, runtime)

    def without_history(self, who: str) -> str:
        return (f"{who}'s hist_time input is the requested time, which it did not see in training"
                if self.learns_history else "")

    @property
    def feature_mode(self) -> str:
        return str(self.manifest.get("features", "sampled"))

    @property
    def schema_hash(self) -> str:
        """The feature schema the model was trained on (checked against this version when loaded)."""
        return str(self.manifest.get("schema_hash", "") or "")

    def describe(self) -> str:
        return f"rltune:{self.path}"

    def formula(self) -> str | None:
        """A linear model's score as one readable line (``rltune train --algo cem`` records its weights
        in the manifest); None for a multi-layer actor, whose weights say nothing on their own."""
        weights = self.manifest.get("linear_scorer")
        if not isinstance(weights, dict) or not weights:
            return None
        try:
            inputs = sorted(((k, float(v)) for k, v in weights.items() if k != "bias"),
                            key=lambda kv: -abs(kv[1]))
            bias = float(weights.get("bias", 0.0))
        except (TypeError, ValueError):  # a hand-edited manifest: the scores come from actor.pt anyway
            return None
        terms = " ".join(f"{v:+.3g} {k}" for k, v in inputs)  # the heaviest first
        return f"score = {terms} {bias:+.3g} (higher first; inputs: docs/features.md)"

    def raw_scores(self, view: QueueView) -> F64:
        import torch

        if self.learns_history:
            view = dataclasses.replace(view, history=self.history)
        with span("features"):
            x = torch.from_numpy(np.ascontiguousarray(feature_matrix(view, self.feature_mode)))
        with span("actor"), torch.no_grad():
            out = self.actor(x)
        return np.asarray(out.detach().numpy(), dtype=np.float64)

    def scores(self, view: QueueView) -> F64:
        if not len(view.idx):
            return np.zeros(0)
        s = self.raw_scores(view)
        # Keep chunks apart whatever the actor says: squash scores into (-1, 1) and offset by chunk.
        return np.asarray(chunk_rank(view) * 4.0 - np.tanh(s / 8.0), dtype=np.float64)


def read_manifest(path: Path) -> dict[str, Any]:
    mf = path / MANIFEST_FILE
    if not path.is_dir():
        raise UserError(f"model directory {path} does not exist (train one with 'rltune train' or use a "
                        "heuristic base policy)")
    if not mf.is_file():
        raise UserError(f"model {path}: {MANIFEST_FILE} is missing")
    try:
        data: dict[str, Any] = json.loads(mf.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"model {path}: {MANIFEST_FILE} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise UserError(f"model {path}: {MANIFEST_FILE} must hold a JSON object")
    return data


def actor_sha256(model_dir: Path) -> str | None:
    """The first 16 hex digits of the actor file's SHA-256 (what results and manifests name a model by);
    None when the directory has no actor file."""
    model = model_dir / MODEL_FILE
    return hashlib.sha256(model.read_bytes()).hexdigest()[:16] if model.is_file() else None


def model_identity(path: str | Path) -> dict[str, Any]:
    """Which model a result was measured with: the actor file's hash and the run its manifest records
    (with the daemon settings its rollouts ran under, None before manifests recorded them), so a results
    file still names its model after the directory has been retrained."""
    p = Path(path)
    manifest = read_manifest(p)
    sha = actor_sha256(p)
    if sha is None:
        raise UserError(f"model {p}: {MODEL_FILE} is missing")
    heldout = manifest.get("heldout") or {}
    return {"actor_sha256": sha,
            **{k: manifest.get(k) for k in ("trace", "base_policy", "iterations", "best_iteration",
                                            "training_minutes", "seed")},
            "heldout_bsld": (heldout.get("model") or {}).get("bsld"),
            "heldout_base_bsld": (heldout.get("base") or {}).get("bsld"),
            "rollouts": manifest.get("rollouts")}


def load_learned(path: str | Path) -> LearnedPolicy:
    """Load and check a model directory; any problem is one ``UserError`` line."""
    import torch

    p = Path(path)
    manifest = read_manifest(p)
    reach = manifest.get("reach") or 0
    if reach != 0:  # its actor corrected the base policy's order by fewer than `reach` places
        shown = f"{reach:g}" if isinstance(reach, (int, float)) else repr(reach)
        raise UserError(f"model {p} is a residual model (reach {shown}), which this version no longer runs: "
                        "retrain it")
    want = manifest.get("schema_hash")
    mode = str(manifest.get("features", "sampled"))
    have = features.SCHEMA_HASH if mode == "sampled" else naive.NAIVE_SCHEMA_HASH
    if want != have:
        raise UserError(f"model {p}: feature schema {want!r} does not match this version's {have!r}; "
                        "retrain the model with this version")
    dim = features.ACTOR_DIM if mode == "sampled" else naive.NAIVE_DIM
    if manifest.get("input_dim", dim) != dim:
        raise UserError(f"model {p}: its actor reads {manifest.get('input_dim')!r} inputs, this version's "
                        f"{dim}; retrain the model with this version")
    model = p / MODEL_FILE
    if not model.is_file():
        raise UserError(f"model {p}: {MODEL_FILE} is missing")
    try:
        actor = torch.jit.load(str(model), map_location="cpu")  # type: ignore[no-untyped-call]
        actor.eval()
        probe = actor(torch.zeros(2, dim))
        if tuple(probe.shape) != (2,) or not bool(torch.isfinite(probe).all()):
            raise ValueError(f"scores of shape {tuple(probe.shape)}")
    except Exception as exc:  # torch raises many types for a bad archive
        raise UserError(f"model {p}: {MODEL_FILE} is not a usable TorchScript actor "
                        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from exc
    return LearnedPolicy(actor, manifest, str(p))
