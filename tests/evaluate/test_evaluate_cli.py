"""rltune evaluate / bench: outputs, stable JSON keys, agreement with a direct simulation, errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from rltune_daemon.cli.main import main
from rltune_daemon.domain.workload import Workload
from rltune_daemon.errors import UserError
from rltune_daemon.evaluate import heldout_windows
from rltune_daemon.evaluate.runner import EvalConfig, make_controller
from rltune_daemon.evaluate.windows import window_starts
from rltune_daemon.policies import make_policy
from rltune_daemon.sim import SimConfig, Simulator, simulate
from rltune_daemon.traces import load_workload


def _config(tmp_path: Path, text: str) -> list[str]:
    """``--config`` with a TOML file holding ``text``."""
    path = tmp_path / "evaluate.toml"
    path.write_text(text)
    return ["--config", str(path)]


def _small(tmp_path: Path, trace_jobs: int = 2000) -> list[str]:
    """One worker process on a testbed trace of ``trace_jobs`` jobs."""
    return _config(tmp_path, f"jobs = 1\n\n[opts]\njobs = {trace_jobs}\n")


def test_window_starts_seeded_and_bounded() -> None:
    a = window_starts(5000, 10, 1024, 0)
    assert a == window_starts(5000, 10, 1024, 0)
    assert a != window_starts(5000, 10, 1024, 1)
    assert all(0 <= s <= 5000 - 1024 for s in a)
    with pytest.raises(UserError, match="fewer than --window-size 1024"):
        window_starts(100, 10, 1024, 0)


def test_evaluate_writes_results_that_match_direct_simulation(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ev"
    rc = main(["evaluate", "--trace", "testbed", *_small(tmp_path), "--windows", "2",
               "--window-size", "100", "--policies", "fcfs,sjf,qssf", "--out", str(out)])
    assert rc == 0
    res = json.loads((out / "results.json").read_text())
    for name in ("fcfs", "sjf", "qssf"):
        assert {"bsld", "wait_mean", "jct_mean", "utilization", "makespan"} <= set(res["policies"][name])
        assert len(res["policies"][name]["per_window"]) == 2
    assert res["config"]["estimates_used"] == "user"
    assert res["config"]["command"].startswith("rltune evaluate")
    md = (out / "results.md").read_text()
    assert md.count("| `") == 6 and "Mean wait (s) by job size (GPUs requested" in md  # two tables
    for png in ("wait_cdf.png", "bsld_per_window.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    # the window numbers are the simulator's numbers for the same window
    w = load_workload("testbed", estimates="user", seed=0, jobs="2000")
    _, wins = heldout_windows(w, 2, 100, 0)
    direct = [simulate(win, make_policy("sjf")).metrics["bsld"] for win in wins]
    assert [pw["bsld"] for pw in res["policies"]["sjf"]["per_window"]] == pytest.approx(direct)
    assert "| `sjf` |" in capsys.readouterr().out
    # who waits: every job that ran in one size class, its mean the simulator's waits of those jobs
    by_size = res["policies"]["sjf"]["wait_by_size"]
    assert sum(c["jobs"] for c in by_size.values()) == 200
    runs = [(win, simulate(win, make_policy("sjf"))) for win in wins]
    waits = [r.start[i] - j.submit for win, r in runs for i, j in enumerate(win.jobs) if j.gpus == 1]
    assert by_size["1"]["wait_mean"] == pytest.approx(sum(waits) / len(waits))


def test_train_split_windows_never_touch_the_held_out_tail(tmp_path: Path) -> None:
    w = load_workload("testbed", estimates="user", seed=0, jobs="2000")
    train, held = heldout_windows(w, 3, 100, 0)
    _, tuning = heldout_windows(w, 3, 100, 0, part="train")
    train_ids = {j.id for j in train.jobs}
    assert all({j.id for j in win.jobs} <= train_ids for win in tuning)
    assert not any({j.id for j in win.jobs} & train_ids for win in held)
    _cli_split_is_those_windows(tmp_path / "tune", "2000", "train", tuning[:2], "training part")


def _cli_split_is_those_windows(out: Path, jobs: str, split: str, wins: list[Workload], needle: str) -> None:
    """``rltune evaluate --split`` simulates exactly ``wins`` (SJF, 100-job windows of the testbed with
    ``jobs`` jobs) and its report names the part with ``needle``."""
    assert main(["evaluate", "--trace", "testbed", *_small(out.parent, int(jobs)), "--windows",
                 str(len(wins)), "--window-size", "100", "--policies", "sjf", "--split", split, "--out",
                 str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    direct = [simulate(win, make_policy("sjf")).metrics["bsld"] for win in wins]
    assert res["config"]["split"] == split
    assert [pw["bsld"] for pw in res["policies"]["sjf"]["per_window"]] == pytest.approx(direct)
    assert needle in (out / "results.md").read_text()


def test_train_tail_windows_sit_between_their_history_and_the_held_out_tail(tmp_path: Path) -> None:
    """Temporal validation: windows from the training part's last 10 %, history (QSSF, models) before it,
    nothing from the held-out tail."""
    w = load_workload("testbed", estimates="user", seed=0, jobs="4000")
    train, held = heldout_windows(w, 3, 100, 0)
    history, tail = heldout_windows(w, 3, 100, 0, part="train-tail")
    train_ids, history_ids = {j.id for j in train.jobs}, {j.id for j in history.jobs}
    assert history_ids < train_ids and len(history_ids) == len(train_ids) - round(0.1 * len(train_ids))
    for win in tail:
        ids = {j.id for j in win.jobs}
        assert ids <= train_ids - history_ids
        assert not ids & {j.id for h in held for j in h.jobs}
        assert win.jobs[0].submit >= 0.0  # rebased like the held-out tail: starts from an idle cluster
    with pytest.raises(ValueError, match="part must be"):
        heldout_windows(w, 1, 100, 0, part="tail")
    _cli_split_is_those_windows(tmp_path / "tail", "4000", "train-tail", tail[:2], "temporal validation")


def test_train_recent_windows_are_disjoint_and_end_where_the_training_part_ends(tmp_path: Path) -> None:
    """Disjoint windows laid end to end over the training part's last jobs (independent windows for a
    paired comparison), history before them, nothing from the held-out tail; too many windows refused."""
    w = load_workload("testbed", estimates="user", seed=0, jobs="2000")
    train, held = heldout_windows(w, 3, 100, 0)
    history, recent = heldout_windows(w, 3, 100, 0, part="train-recent")
    assert history.jobs == train.jobs[:-300]
    assert [win.jobs for win in recent] == [train.jobs[-300:-200], train.jobs[-200:-100], train.jobs[-100:]]
    assert heldout_windows(w, 3, 100, 7, part="train-recent")[1][0].jobs == recent[0].jobs  # not drawn
    assert not {j.id for win in recent for j in win.jobs} & {j.id for h in held for j in h.jobs}
    with pytest.raises(UserError, match="fewer or smaller windows"):
        heldout_windows(w, 18, 100, 0, part="train-recent")
    _, two = heldout_windows(w, 2, 100, 0, part="train-recent")
    _cli_split_is_those_windows(tmp_path / "recent", "2000", "train-recent", two, "disjoint windows")


def test_recent_windows_end_where_the_trace_ends_with_everything_before_as_history() -> None:
    w = load_workload("testbed", estimates="user", seed=0, jobs="1000")
    history, recent = heldout_windows(w, 2, 100, 0, part="recent")
    assert history.jobs == w.jobs[:-200]
    assert [win.jobs for win in recent] == [w.jobs[-200:-100], w.jobs[-100:]]
    with pytest.raises(UserError, match="fewer or smaller windows"):
        heldout_windows(w, 10, 100, 0, part="recent")


def test_evaluate_parallel_equals_serial(tmp_path: Path) -> None:
    from rltune_daemon.evaluate import EvalConfig, evaluate

    cfg = EvalConfig("testbed", ("wfp3",), windows=2, window_size=100, opts={"jobs": "2000"}, jobs=1)
    serial = evaluate(cfg, progress=False)
    par = evaluate(EvalConfig(**{**cfg.__dict__, "jobs": 2}), progress=False)
    assert serial["policies"]["wfp3"]["per_window"] == par["policies"]["wfp3"]["per_window"]


def test_evaluate_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["evaluate", "--trace", "testbed", "--policies", "fcfs,lifo", "--windows", "1",
               *_config(tmp_path, "jobs = 1")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "unknown policy 'lifo'" in err
    for text, needle in (("interval = 0", "interval 0: must be a positive number"),
                         ("react = -1", "react -1: must be 0"),
                         ('starvation_seconds = "never"', "starvation_seconds 'never': expected a positive"),
                         ("starvation_seconds = 0", "starvation_seconds 0: expected a positive"),
                         ("starvation_stretch = -1", "starvation_stretch -1: must be 0"),
                         ("starvation_stretch = 5000", "starvation_stretch 5000: must be 0"),
                         ("starvation_stretch = nan", "starvation_stretch nan: must be 0"),
                         ('starvation_reference = "fifo"', "starvation_reference 'fifo': expected one of"),
                         ("starvation_slots = -1", "starvation_slots -1: must be 0"),
                         ('mode = "events"', "mode 'events': expected 'daemon' or 'event'"),
                         ('milp = "no"', "milp = 'no': expected true or false"),
                         ("jobs = 1.5", "jobs = 1.5: expected a whole number"),
                         ("opts = 3", "opts = 3: expected a table"),
                         ("starvation_hours = 4", "unknown key 'starvation_hours' (valid keys: interval,"),
                         ("windows = 3", "windows is set on the command line (--windows), not in a config"),
                         ("interval = ", "invalid TOML")):
        assert main(["evaluate", "--trace", "testbed", *_config(tmp_path, text)]) == 2, text
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ") and needle in err, (text, err)
    assert main(["evaluate", "--trace", "testbed", "--bf-reservations", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bf-reservations 0: must be at least 1" in err
    rc = main(["evaluate", "--trace", "/nonexistent/trace.swf", *_small(tmp_path)])
    assert rc == 2
    assert "Traceback" not in capsys.readouterr().err


def test_config_keys_are_the_settings_results_record(tmp_path: Path) -> None:
    """Every ``--config`` key sets the EvalConfig field of its name, which results.json records under the
    same name; a guard switched off reads as it is recorded ("off")."""
    import math

    from rltune_daemon.cli.evaluate_cmd import eval_config
    from rltune_daemon.cli.main import build_parser
    from rltune_daemon.evaluate import EvalConfig

    text = ('mode = "event"\ninterval = 30\nreact = 0\nstarvation_seconds = "off"\nstarvation_slots = 1\n'
            'starvation_stretch = 0\nstarvation_reference = "priority"\nmilp = false\npure = true\n'
            'jobs = 3\n\n[opts]\njobs = 5000\nload = 0.9\n')
    args = build_parser().parse_args(["evaluate", "--trace", "testbed", "--policies", "sjf",
                                      *_config(tmp_path, text)])
    assert eval_config(args) == EvalConfig(
        trace="testbed", policies=("sjf",), mode="event", interval=30.0, react=0.0,
        starvation_seconds=math.inf, starvation_slots=1, starvation_stretch=0.0,
        starvation_reference="priority", milp=False, pure=True, jobs=3, opts={"jobs": "5000", "load": "0.9"})
    plain = build_parser().parse_args(["evaluate", "--trace", "testbed", "--policies", "sjf"])
    assert eval_config(plain) == EvalConfig(trace="testbed", policies=("sjf",))


def test_bf_reservations_reach_the_simulator_and_the_report(tmp_path: Path) -> None:
    """``--bf-reservations`` runs the windows with Slurm-like reservations beyond the head: the numbers are
    the simulator's for that setting (not EASY's) and the config and report say which it was."""
    out = tmp_path / "ev"
    rc = main(["evaluate", "--trace", "testbed", *_small(tmp_path, 3000), "--windows", "3",
               "--window-size", "300", "--policies", "fcfs", "--bf-reservations", "8", "--out", str(out)])
    assert rc == 0
    res = json.loads((out / "results.json").read_text())
    assert res["config"]["bf_reservations"] == 8
    assert "reserves for the first 8 blocked jobs" in (out / "results.md").read_text()
    w = load_workload("testbed", estimates="user", seed=0, jobs="3000")
    _, wins = heldout_windows(w, 3, 300, 0)
    cfg = SimConfig(bf_reservations=8)
    slurm_like = [simulate(win, make_policy("fcfs"), cfg).metrics["bsld"] for win in wins]
    easy = [simulate(win, make_policy("fcfs")).metrics["bsld"] for win in wins]
    assert [pw["bsld"] for pw in res["policies"]["fcfs"]["per_window"]] == pytest.approx(slurm_like)
    assert slurm_like != pytest.approx(easy)


def test_bench_sim_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "sim", "--trace", "testbed", "--policy", "fcfs"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["jobs"] == 1024 and data["best_seconds"] > 0 and data["stats"]["started"] == 1024
    assert data["bf_reservations"] == 1
    assert main(["bench", "sim", "--trace", "testbed", "--policy", "fcfs", "--bf-reservations", "4"]) == 0
    more = json.loads(capsys.readouterr().out)
    assert more["bf_reservations"] == 4 and more["stats"]["reservations"] > data["stats"]["reservations"]
    assert main(["bench", "sim", "--trace", "testbed", "--bf-reservations", "0"]) == 2
    assert "--bf-reservations 0" in capsys.readouterr().err
    # the daemon's cycles time as evaluate runs them (same schedule), not as the heuristic alone
    small = ["bench", "sim", "--trace", "testbed", "--opt", "jobs=120"]
    assert main([*small, "--policy", "daemon:sjf"]) == 0
    daemon = json.loads(capsys.readouterr().out)
    assert daemon["stats"]["ticks"] > 0 and daemon["stats"]["started"] == 120
    w = load_workload("testbed", estimates="user", seed=0, jobs="120")
    cfg = EvalConfig(trace="testbed", policies=("daemon:sjf",))
    ctl = make_controller("daemon:sjf", w.with_jobs(()), cfg)
    same = Simulator(w, ctl, cfg.sim_config()).run()
    assert daemon["wait_mean"] == pytest.approx(same.metrics["wait_mean"])
    assert main([*small, "--policy", "daemon:nosuch"]) == 2


def test_daemon_spec_runs_a_baseline_through_the_planner() -> None:
    """``daemon:<baseline>`` is the daemon without a model. With Slurm's own order as the policy it
    writes no SiteFactor at all, as the live daemon with ``base_policy = multifactor`` (the planner's
    guard, measured against submit order, would lift jobs multifactor keeps back: not written), so it
    matches plain multifactor up to the extra scheduling passes its 60-s cycles cause; with SJF it
    re-plans only every interval and so differs from SJF ranked at every event."""
    from rltune_daemon.evaluate import EvalConfig, evaluate
    from rltune_daemon.evaluate.runner import make_controller
    from rltune_daemon.sim.daemon import DaemonModeController
    from rltune_daemon.sim.engine import Simulator
    from rltune_daemon.sim.view import SimView

    cfg = EvalConfig("testbed", ("multifactor", "daemon:multifactor", "sjf", "daemon:sjf"), windows=2,
                     window_size=150, opts={"jobs": "2000"}, jobs=1, milp=False)
    res = evaluate(cfg, progress=False)["policies"]
    assert res["daemon:multifactor"]["bsld"] == pytest.approx(res["multifactor"]["bsld"], rel=0.01)
    assert res["daemon:sjf"]["per_window"] != res["sjf"]["per_window"]
    w = load_workload("testbed", estimates="user", seed=0, jobs="2000")
    event = EvalConfig("testbed", ("daemon:sjf",), mode="event", interval=30.0, react=0.0)
    ctl = make_controller("daemon:sjf", w, event)
    assert isinstance(ctl, DaemonModeController) and ctl.interval == 30.0
    with pytest.raises(UserError, match="unknown policy 'lifo'"):
        make_controller("daemon:lifo", w, cfg)

    class Watch(DaemonModeController):
        written = 0

        def on_tick(self, sim: SimView) -> None:
            super().on_tick(sim)
            Watch.written += sum(1 for v in self.slurm.site.values() if v)

    _, wins = heldout_windows(w, 2, 150, 0)
    sjf = make_controller("daemon:sjf", w, cfg)
    assert isinstance(sjf, DaemonModeController) and not sjf.leave_order
    written = {}
    for reference in ("priority", "both"):  # only the submit-order guard moves Slurm's own order ...
        run_cfg = dataclasses.replace(cfg, starvation_reference=reference)
        mf = make_controller("daemon:multifactor", w, run_cfg)
        assert isinstance(mf, DaemonModeController) and mf.leave_order
        for leave in (True, False):  # ... and daemon:multifactor writes none of it, as the daemon
            Watch.written = 0
            watch = Watch(mf.policy, mf.cfg, interval=60.0, leave_order=leave)
            Simulator(wins[0], watch).run()
            assert watch.plans > 10
            written[reference, leave] = Watch.written
    assert written["priority", True] == written["both", True] == written["priority", False] == 0
    assert written["both", False] > 0


def test_daemon_mode_queue_checks_replan_a_changed_queue_sooner() -> None:
    """``react``: the engine ticks every 5 s, but a cycle (hint ageing, re-plan) happens only when a job
    arrived, started or ended, or the full interval passed; so there are more plans than with 60-s
    cycles alone, and far fewer cycles than ticks."""
    from rltune_daemon.evaluate import EvalConfig
    from rltune_daemon.evaluate.runner import make_controller
    from rltune_daemon.sim.daemon import DaemonModeController
    from rltune_daemon.sim.engine import Simulator

    w = load_workload("testbed", estimates="user", seed=0, jobs="2000")
    _, wins = heldout_windows(w, 1, 200, 0)
    runs = {}
    for react in (0.0, 5.0):
        cfg = EvalConfig("testbed", ("daemon:sjf",), react=react, milp=False)
        ctl = make_controller("daemon:sjf", w, cfg)
        assert isinstance(ctl, DaemonModeController) and ctl.interval == (react or 60.0)
        sim = Simulator(wins[0], ctl)
        sim.run()
        runs[react] = (ctl.plans, ctl.cycles, sim.stats["ticks"])
    (plans0, cycles0, ticks0), (plans5, cycles5, ticks5) = runs[0.0], runs[5.0]
    assert cycles0 == ticks0 and plans0 <= cycles0
    assert plans5 > plans0 and cycles5 < ticks5 and plans5 <= cycles5


def test_evaluate_prints_one_verdict_line_for_a_site_choosing_what_to_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ev"
    assert main(["evaluate", "--trace", "testbed", *_small(tmp_path), "--windows", "3", "--window-size",
                 "100", "--policies", "multifactor,daemon:sjf", "--out", str(out)]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("verdict: ")]
    assert len(lines) == 1 and "daemon:sjf vs multifactor: " in lines[0]
    assert lines[0].startswith(("verdict: leave Slurm alone", "verdict: the daemon without a model"))
    assert lines[0] in (out / "results.md").read_text()


def test_default_is_the_daemon_with_no_configuration_and_is_judged_for_harm(tmp_path: Path) -> None:
    """``default`` runs the daemon's own settings whatever ``--config`` says for the other policies, and
    every policy but multifactor carries the no-harm judgement against it; the markdown names it."""
    out = tmp_path / "ev"
    cfg = _config(tmp_path, 'jobs = 1\nreorder = "queue"\nnext_in_line = 0\n\n[opts]\njobs = 2000\n')
    rc = main(["evaluate", "--trace", "testbed", *cfg, "--windows", "2", "--window-size", "150",
               "--policies", "multifactor,default,daemon:sjf", "--out", str(out)])
    assert rc == 0
    res = json.loads((out / "results.json").read_text())
    pols = res["policies"]
    assert "no_harm" not in pols["multifactor"]
    for name in ("default", "daemon:sjf"):
        judged = pols[name]["no_harm"]
        assert isinstance(judged["ok"], bool) and "wait_p99_reference" in judged
    # the default planned within size classes; daemon:sjf here reordered every job, so they differ
    assert pols["default"]["per_window"] != pols["daemon:sjf"]["per_window"]
    w = load_workload("testbed", estimates="user", seed=0, jobs="2000")
    train, wins = heldout_windows(w, 2, 150, 0)
    ctl = make_controller("default", train, EvalConfig(trace="testbed", policies=("default",)))
    direct = Simulator(wins[0], ctl, SimConfig()).run()
    assert pols["default"]["per_window"][0]["wait_mean"] == pytest.approx(direct.metrics["wait_mean"])
    md = (out / "results.md").read_text()
    assert "No harm against Slurm's multifactor order" in md and "| `default` |" in md
