"""Export and load: the TorchScript actor scores exactly like the eager one, a model written by the
exporter loads through ``load_learned``, and every broken model directory is a one-line ``UserError``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from train_helpers import export_untrained, one_torch_thread, random_view

from rltune_daemon import features
from rltune_daemon.errors import UserError
from rltune_daemon.features.naive import NAIVE_DIM, NAIVE_SCHEMA_HASH
from rltune_daemon.policies.learned import MANIFEST_FILE, MAX_QUEUE, MODEL_FILE, chunk_rank, load_learned
from rltune_daemon.train.network import Actor


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_torch_thread():
        yield


def test_torchscript_equals_eager() -> None:
    torch.manual_seed(0)
    actor = Actor(features.ACTOR_DIM).eval()
    scripted = torch.jit.script(actor)
    g = torch.Generator().manual_seed(0)
    # several calls: the profiling executor optimises the graph after the first runs
    for shape in [(1,), (5,), (300,), (3, 7), (300,), (300,), (2, 256)]:
        x = torch.randn(*shape, features.ACTOR_DIM, generator=g) * 3
        with torch.no_grad():
            assert torch.equal(scripted(x), actor(x)), shape


def test_exported_model_loads_and_scores_like_the_actor(tmp_path: Path) -> None:
    torch.manual_seed(1)
    actor = Actor(features.ACTOR_DIM)
    manifest = export_untrained(actor, tmp_path / "m")
    assert manifest["schema_hash"] == features.SCHEMA_HASH
    assert manifest["input_dim"] == features.ACTOR_DIM
    on_disk = json.loads((tmp_path / "m" / MANIFEST_FILE).read_text())
    assert on_disk["schema_hash"] == features.SCHEMA_HASH and on_disk["features"] == "sampled"
    learned = load_learned(tmp_path / "m")
    assert learned.describe() == f"rltune:{tmp_path / 'm'}"
    g = torch.Generator().manual_seed(1)
    for n in (1, 17, 300):
        x = torch.randn(n, features.ACTOR_DIM, generator=g)
        with torch.no_grad():
            assert torch.equal(learned.actor(x), actor.eval()(x))
    # through the policy: features of a real queue, scored by the eager actor
    view = random_view(40, seed=2)
    with torch.no_grad():
        want = actor(torch.from_numpy(features.actor_features(view))).numpy().astype(np.float64)
    np.testing.assert_array_equal(learned.raw_scores(view), want)
    # lower runs first: the highest actor output is the smallest score
    assert int(np.argmin(learned.scores(view))) == int(np.argmax(want))


def test_naive_model_round_trip(tmp_path: Path) -> None:
    torch.manual_seed(2)
    actor = Actor(NAIVE_DIM)
    manifest = export_untrained(actor, tmp_path / "naive", features="naive")
    assert manifest["schema_hash"] == NAIVE_SCHEMA_HASH and manifest["placement"] is False
    learned = load_learned(tmp_path / "naive")
    view = random_view(12, seed=3)
    assert learned.raw_scores(view).shape == (12,)


def test_learned_policy_ranks_chunks_by_age() -> None:
    # whatever the actor says, the oldest MAX_QUEUE jobs come before the rest
    from rltune_daemon.policies.learned import LearnedPolicy

    torch.manual_seed(3)
    policy = LearnedPolicy(torch.jit.script(Actor(features.ACTOR_DIM).eval()), {"features": "sampled"})
    view = random_view(MAX_QUEUE + 40, seed=4)
    chunk = chunk_rank(view)
    age_order = np.lexsort((view.idx, view.table.submit[view.idx]))
    assert (chunk[age_order[:MAX_QUEUE]] == 0).all() and (chunk[age_order[MAX_QUEUE:]] == 1).all()
    s = policy.scores(view)
    assert s[chunk == 0].max() < s[chunk == 1].min()
    assert policy.scores(random_view(0)).shape == (0,)


# ----------------------------------------------------------------------------- refusals
def _good(tmp: Path) -> Path:
    torch.manual_seed(0)
    export_untrained(Actor(features.ACTOR_DIM), tmp / "model")
    return tmp / "model"


def _manifest_edit(key: str, value: object) -> Callable[[Path], object]:
    def edit(p: Path) -> None:
        data = json.loads((p / MANIFEST_FILE).read_text())
        data[key] = value
        (p / MANIFEST_FILE).write_text(json.dumps(data))
    return edit


class _Wide(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x  # [n, dim], not [n]


class _Nan(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1) * float("nan")


def _script(module: torch.nn.Module) -> Callable[[Path], object]:
    def edit(p: Path) -> None:
        torch.jit.save(torch.jit.script(module), str(p / MODEL_FILE))
    return edit


BROKEN: dict[str, tuple[Callable[[Path], object], str]] = {
    "missing manifest": (lambda p: (p / MANIFEST_FILE).unlink(), "manifest.json is missing"),
    "corrupt manifest": (lambda p: (p / MANIFEST_FILE).write_text('{"schema_hash": '), "not valid JSON"),
    "binary manifest": (lambda p: (p / MANIFEST_FILE).write_bytes(b"\xff\xfe\x00garbage"), "not valid JSON"),
    "manifest not an object": (lambda p: (p / MANIFEST_FILE).write_text("[1, 2]"), "JSON object"),
    "schema mismatch": (_manifest_edit("schema_hash", "0123456789abcdef"), "does not match"),
    "schema missing": (_manifest_edit("schema_hash", None), "does not match"),
    "schema with newline": (_manifest_edit("schema_hash", "bad\nhash"), "does not match"),
    "features changed": (_manifest_edit("features", "naive"), "does not match"),
    "missing actor": (lambda p: (p / MODEL_FILE).unlink(), "actor.pt is missing"),
    "corrupt actor": (lambda p: (p / MODEL_FILE).write_bytes(b"PK\x03\x04 not a zip at all\n" * 50),
                      "not a usable TorchScript actor"),
    "truncated actor": (lambda p: (p / MODEL_FILE).write_bytes((p / MODEL_FILE).read_bytes()[:200]),
                        "not a usable TorchScript actor"),
    "state dict, not TorchScript": (
        lambda p: torch.save(Actor(features.ACTOR_DIM).state_dict(), p / MODEL_FILE),
        "not a usable TorchScript actor"),
    "wrong output shape": (_script(_Wide()), "not a usable TorchScript actor"),
    "non-finite scores": (_script(_Nan()), "not a usable TorchScript actor"),
    "wrong input width": (_script(Actor(features.ACTOR_DIM + 1)), "not a usable TorchScript actor"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_model_is_a_one_line_user_error(tmp_path: Path, case: str) -> None:
    path = _good(tmp_path)
    load_learned(path)  # the untouched export is fine
    breaker, needle = BROKEN[case]
    breaker(path)
    with pytest.raises(UserError) as info:
        load_learned(path)
    msg = str(info.value)
    assert needle in msg
    assert "\n" not in msg and msg.strip() == msg and str(path) in msg


def test_missing_directory_is_a_one_line_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist") as info:
        load_learned(tmp_path / "nope")
    assert "\n" not in str(info.value)
    with pytest.raises(UserError, match="does not exist"):
        load_learned(str(tmp_path / "nope" / "deeper"))


def test_learned_controller_plans_with_the_simulators_effects(tmp_path: Path) -> None:
    """``pure`` (rltune evaluate's config) switches placement effects off in the simulator; the MILP must
    then plan with the same (zero) slowdowns, not the defaults."""
    from train_helpers import export_untrained

    from rltune_daemon.domain.effects import EffectsConfig
    from rltune_daemon.evaluate.runner import EvalConfig, make_controller
    from rltune_daemon.traces import load_workload
    from rltune_daemon.train.network import Actor as _Actor

    export_untrained(_Actor(features.ACTOR_DIM), tmp_path / "m")
    wl = load_workload("testbed", estimates="user", seed=0)
    spec = f"rltune:{tmp_path / 'm'}"

    def ctl(**kw: Any) -> Any:
        return make_controller(spec, wl, EvalConfig("testbed", (spec,), **kw))

    pure, default = ctl(pure=True), ctl()
    assert pure.cfg.effects == EffectsConfig.pure()
    assert default.cfg.effects == EffectsConfig()
    assert default.full_interval == 60.0 and default.react == 5.0
    assert ctl(interval=15.0).full_interval == 15.0
    assert ctl(starvation_seconds=float("inf")).cfg.starvation_seconds == float("inf")
    assert default.cfg.starvation_seconds == 4 * 3600.0
    assert default.cfg.placement and not ctl(milp=False).cfg.placement
    assert ctl(mode="event").cfg.effects == EffectsConfig()


def test_daemon_policy_choice_reports_the_models_schema_hash(tmp_path: Path) -> None:
    """``rltune_model_info`` takes its schema label from here; it was once always blank."""
    from train_helpers import export_untrained

    from rltune_daemon import features
    from rltune_daemon.service.policy import choose_policy
    from rltune_daemon.train.network import Actor as _Actor

    export_untrained(_Actor(features.ACTOR_DIM), tmp_path / "m")
    choice = choose_policy(str(tmp_path / "m"), "fcfs")
    assert choice.policy.name == "rltune" and not choice.fallback
    assert choice.schema_hash == features.SCHEMA_HASH
    # which file exactly: --check-config and the daemon's start-up log say it
    import hashlib

    digest = hashlib.sha256((tmp_path / "m" / "actor.pt").read_bytes()).hexdigest()[:16]
    assert choice.identity["actor_sha256"] == digest and digest in choice.described
    assert choice.identity["trace"] in choice.described
    broken = choose_policy(str(tmp_path / "missing"), "fcfs")
    assert broken.fallback and broken.described == "fcfs" and not broken.identity


def test_evaluation_results_name_the_exact_actor_file(tmp_path: Path) -> None:
    """A results file must still say which model it measured after the directory is retrained."""
    import hashlib

    import torch
    from train_helpers import export_untrained

    from rltune_daemon.evaluate.runner import EvalConfig, evaluate
    from rltune_daemon.train.network import Actor as _Actor

    torch.manual_seed(0)
    export_untrained(_Actor(features.ACTOR_DIM), tmp_path / "m")
    spec = f"rltune:{tmp_path / 'm'}"
    cfg = EvalConfig("testbed", ("sjf", spec), windows=1, window_size=64, jobs=1, opts={"jobs": "2000"})
    first = evaluate(cfg, progress=False)["config"]["models"]
    digest = hashlib.sha256((tmp_path / "m" / "actor.pt").read_bytes()).hexdigest()[:16]
    assert list(first) == [spec] and first[spec]["actor_sha256"] == digest
    torch.manual_seed(1)
    export_untrained(_Actor(features.ACTOR_DIM), tmp_path / "m")  # retrained in place
    assert evaluate(cfg, progress=False)["config"]["models"][spec]["actor_sha256"] != digest


def test_daemon_does_not_act_on_a_model_its_own_heldout_record_puts_behind(tmp_path: Path) -> None:
    """An admin must not run, unawares, a model whose own manifest shows it worse than no model, or
    making a class of jobs pay: the daemon falls back to what the record shows ahead, unless
    ``run_model_behind_base`` says to run it anyway."""
    import json

    from train_helpers import export_untrained

    from rltune_daemon.service.policy import choose_policy
    from rltune_daemon.train.network import Actor as _Actor

    export_untrained(_Actor(features.ACTOR_DIM), tmp_path / "m")
    m = str(tmp_path / "m")
    assert choose_policy(m, "sjf").behind_base == ""  # no held-out record: nothing to judge
    manifest_path = tmp_path / "m" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())

    # the no-harm figures, the same for every policy: only the means below decide
    figures = {"wait_by_size": {"1": {"jobs": 100, "wait_mean": 200.0}}, "wait_p99": 900.0,
               "utilization": 0.7, "utilization_arrival": 0.7}

    def record(model: list[float], base: list[float], mf: list[float], waits: list[float]) -> None:
        per = {"model": {"bsld": model, "wait_mean": waits},
               "daemon_base": {"bsld": base, "wait_mean": waits},
               "multifactor": {"bsld": mf, "wait_mean": waits}}
        mean = {k: {"bsld": sum(v["bsld"]) / len(v["bsld"]), **figures} for k, v in per.items()}
        manifest["heldout"] = {"windows": len(model), **mean, "per_window": per}
        manifest_path.write_text(json.dumps(manifest))

    waits = [100.0, 200.0, 300.0]
    # behind its base applied by the daemon beyond noise (every window 0.5 higher), ahead of multifactor:
    # the daemon runs that base, not base_policy (multifactor here), which the record shows behind it
    record([3.5, 4.5, 5.5], [3.0, 4.0, 5.0], [9.0, 9.0, 9.0], waits)
    choice = choose_policy(m, "multifactor")
    assert choice.policy.name == "sjf" and choice.fallback_kind == "behind_base"
    assert "behind sjf: bounded slowdown 4.50 against 4.00" in choice.fallback
    assert "run_model_behind_base = true" in choice.fallback and "multifactor" not in choice.fallback
    # the admin said to run it: the model decides and the reason stays a warning
    anyway = choose_policy(m, "sjf", run_behind=True)
    assert anyway.policy.name == "rltune" and not anyway.fallback and "behind sjf" in anyway.behind_base
    # higher on average, but inside the noise (window differences +3, -2, +0.5): a tie, the model runs
    record([6.0, 2.0, 5.5], [3.0, 4.0, 5.0], [9.0, 9.0, 9.0], waits)
    assert not choose_policy(m, "sjf").fallback
    # behind multifactor in wait beyond noise: Slurm's own order, and says which reference and metric
    record([3.0, 4.0, 5.0], [3.0, 4.0, 5.0], [3.0, 4.0, 5.0], waits)
    manifest["heldout"]["per_window"]["multifactor"]["wait_mean"] = [90.0, 180.0, 290.0]
    manifest_path.write_text(json.dumps(manifest))
    choice = choose_policy(m, "sjf")
    assert ("fails the no-harm check against multifactor: mean wait higher than multifactor's"
            in choice.fallback)
    assert choice.policy.name == "multifactor" and choice.leave_order
    # a record from before the per-window lists and the no-harm figures is no evidence that no class
    # pays: Slurm's own order, and the old verdict besides
    manifest["heldout"] = {"windows": 10, "model": {"bsld": 11.62}, "base": {"bsld": 11.08}}
    manifest_path.write_text(json.dumps(manifest))
    old = choose_policy(m, "fcfs")
    assert "11.62 against 11.08 (no noise band" in old.fallback and old.policy.name == "multifactor"
    manifest["heldout"] = {"windows": 10, "model": {"bsld": 48.06}, "base": {"bsld": 48.74}}
    manifest_path.write_text(json.dumps(manifest))
    assert "is not shown to do no harm" in choose_policy(m, "sjf").fallback


def test_a_model_of_another_schema_or_width_is_refused(tmp_path: Path) -> None:
    """A model trained under another feature schema, or reading another number of inputs, would score
    other numbers than it was trained on: the loader refuses it in one line that says to retrain."""
    path = _good(tmp_path)
    _manifest_edit("schema_hash", features.SCHEMA_HASH[::-1])(path)
    with pytest.raises(UserError, match=r"does not match.*retrain"):
        load_learned(path)
    _manifest_edit("schema_hash", features.SCHEMA_HASH)(path)
    _manifest_edit("input_dim", 8)(path)
    with pytest.raises(UserError, match=f"reads 8 inputs, this version's {features.ACTOR_DIM}; retrain"):
        load_learned(path)
