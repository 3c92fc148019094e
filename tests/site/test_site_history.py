"""``rltune site``'s reading of a site's exports: a month of real accounting holds lines no loader may die
on. Each problem is one line, counted; jobs that never ran or cannot run here are counted by reason;
a missing file, a cluster without accounting or a user who cannot see other users' jobs gets one line
saying what to do. (The live Slurm side is tests/site/test_site_slurm.py; here the texts are written
out as Slurm 22.05 prints them.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rltune_daemon.errors import UserError
from rltune_daemon.site.exports import Exports, check_can_read_all, read_dir, sacct_problem, write_dir
from rltune_daemon.site.history import load_history
from rltune_daemon.site.run import gate, windows_for

HEAD = "JobID|User|Account|Partition|QOS|Submit|Start|End|State|ReqTRES|AllocTRES|Timelimit|NodeList"
NODES = "\n".join(
    f"NodeName={n} Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot={c} CPULoad=0.00 Gres=gpu:{t}:{g} "
    f"NodeAddr=127.0.0.1 RealMemory={m} Partitions=gpu,hipri State=IDLE"
    for n, c, t, g, m in (("p100-1", 8, "p100", 4, 64000), ("p100-2", 8, "p100", 4, 64000),
                          ("k80-1", 8, "k80", 2, 32000)))
PARTS = ("PartitionName=gpu AllowGroups=ALL Default=YES PriorityJobFactor=1 PriorityTier=1 Nodes=ALL\n"
         "PartitionName=hipri AllowGroups=ALL Default=NO PriorityJobFactor=1 PriorityTier=2 Nodes=ALL\n")
CONFIG = """Configuration data as of 2026-11-28T12:00:00
AccountingStorageType   = accounting_storage/slurmdbd
PriorityType            = priority/multifactor
PriorityFavorSmall      = Yes
PriorityMaxAge          = 00:05:00
PriorityWeightAge       = 3000
PriorityWeightJobSize   = 10000
PriorityWeightPartition = 0
PriorityWeightQOS       = 0
PriorityWeightFairShare = 0
PriorityWeightTRES      = (null)
SchedulerParameters     = (null)
SlurmUser               = slurm(64030)
"""


def _line(jid: str, submit: int, start: int | None, end: int | None, gpus: int = 1, part: str = "gpu",
          user: str = "ann") -> str:
    def t(s: int | None) -> str:
        return "Unknown" if s is None else f"2026-11-27T10:{s // 60:02d}:{s % 60:02d}"
    return (f"{jid}|{user}|acct|{part}|normal|{t(submit)}|{t(start)}|{t(end)}|COMPLETED|"
            f"billing=1,cpu=1,gres/gpu={gpus},mem=1000M,node=1||00:05:00|p100-1")


def _sacct(extra: list[str] = (), n: int = 80) -> str:  # type: ignore[assignment]
    rows = [_line(str(100 + k), k * 20, k * 20 + 5, k * 20 + 65, gpus=1 + k % 3) for k in range(n)]
    return "\n".join([HEAD, *rows, *extra]) + "\n"


def _exports(sacct: str, config: str = CONFIG) -> Exports:
    return Exports(sacct, config, NODES, PARTS, "test")


def test_a_clean_history_keeps_every_job_and_its_recorded_wait() -> None:
    h = load_history(_exports(_sacct()))
    assert len(h.workload.jobs) == 80 and not h.skipped and not h.problems
    waits = h.recorded_start - [j.submit for j in h.workload.jobs]
    assert waits.tolist() == [5.0] * 80
    assert {j.time_limit for j in h.workload.jobs} == {300.0}  # the recorded limits, not a model's


def test_bad_lines_are_skipped_one_line_each_and_counted() -> None:
    extra = ["123|eve|acct|gpu|normal|2026-11-27T10:00:00|garbage|2026-11-27T10:01:00|COMPLETED|"
             "gres/gpu=1||00:05:00|p100-1",                       # a bad timestamp
             "124|eve|a|b|gpu|normal|2026-11-27T10:00:00|x|y|z",   # a name with '|' shifted the fields
             "125|eve|acct|gpu|normal|2026-11-27T1"]               # the export was cut off here
    h = load_history(_exports(_sacct(extra)))
    assert h.skipped["bad_line"] == 3 and len(h.problems) == 3
    assert all("\n" not in p and "sacct.txt" in p for p in h.problems)
    assert len(h.workload.jobs) == 80


def test_never_started_running_array_het_and_removed_things_are_counted() -> None:
    extra = [_line("200", 100, None, None), _line("201", 100, 200, None),
             _line("300_1", 40, 50, 90), _line("300_2", 40, 60, 95),
             _line("400+0", 70, 80, 120), _line("400+1", 70, 80, 120),
             _line("500", 30, 40, 80, part="retired"),             # a partition since removed
             _line("600", 30, 40, 80, gpus=16)]                     # no node holds 16 GPUs any more
    h = load_history(_exports(_sacct(extra)))
    s = h.skipped
    assert (s["never_started"], s["still_running"], s["array_task"], s["het_component"],
            s["partition_removed"]) == (1, 1, 2, 2, 1)
    assert h.unplaceable == 1 and s["infeasible"] == 1
    assert len(h.workload.jobs) == 80 + 5
    assert any("array tasks" in n for n in h.notes)


def test_sacct_json_reads_like_the_text_export() -> None:
    def job(jid: int, submit: int, start: int, end: int, gpus: int) -> dict[str, object]:
        return {"job_id": jid, "user": "ann", "account": "acct", "partition": "gpu", "qos": "normal",
                "array": {"job_id": 0, "task_id": {"set": False, "infinite": False, "number": 0}},
                "time": {"submission": submit, "start": {"set": True, "number": start},
                         "end": end, "limit": {"set": True, "number": 5}},
                "tres": {"requested": [{"type": "cpu", "count": 1}, {"type": "gres", "name": "gpu",
                                                                     "count": gpus}]}}
    base = 1_800_000_000
    doc = {"jobs": [job(1 + k, base + 20 * k, base + 20 * k + 5, base + 20 * k + 65, 1) for k in range(80)]
           + [{"job_id": 99, "time": {"submission": base, "start": 0, "end": 0}}]}
    h = load_history(_exports(json.dumps(doc)))
    assert len(h.workload.jobs) == 80 and h.skipped.get("never_started") == 1
    assert (h.recorded_start - [j.submit for j in h.workload.jobs]).tolist() == [5.0] * 80
    with pytest.raises(UserError, match="not readable JSON"):
        load_history(_exports(json.dumps(doc)[:500]))


def test_a_history_with_nothing_that_ran_or_a_cluster_from_elsewhere_is_one_line() -> None:
    with pytest.raises(UserError, match="no job that ran"):
        load_history(_exports(HEAD + "\n" + _line("1", 0, None, None) + "\n"))
    cpu_nodes = NODES.replace("Gres=gpu:p100:4", "Gres=(null)").replace("Gres=gpu:k80:2", "Gres=(null)")
    with pytest.raises(UserError, match="one cluster"):
        load_history(Exports(_sacct(), CONFIG, cpu_nodes, PARTS, "test"))
    with pytest.raises(UserError, match="scontrol -o show node"):
        load_history(Exports(_sacct(), CONFIG, "garbage\n", PARTS, "test"))


def test_an_export_folder_round_trips_and_a_missing_file_says_which_command(tmp_path: Path) -> None:
    ex = _exports(_sacct())
    write_dir(ex, tmp_path / "x")
    back = read_dir(tmp_path / "x")
    assert back.texts() == ex.texts()
    (tmp_path / "x" / "nodes.txt").unlink()
    with pytest.raises(UserError, match=r"scontrol -o show node > nodes\.txt"):
        read_dir(tmp_path / "x")
    with pytest.raises(UserError, match="no such folder"):
        read_dir(tmp_path / "nowhere")


def test_who_may_read_the_history() -> None:
    """PrivateData hides other users' jobs from sacct without an error: a user who is not root, SlurmUser
    or an Operator is told which permission is missing, before a one-user history is judged. (The live
    check asks sacctmgr for the AdminLevel; here no runner: the level is unknown.)"""
    private = CONFIG + "PrivateData             = jobs,usage\n"
    check_can_read_all(CONFIG, None, user="ann", uid=1000)  # no PrivateData: everyone sees every job
    check_can_read_all(private, None, user="root", uid=0)
    check_can_read_all(private, None, user="slurm", uid=64030)
    with pytest.raises(UserError, match="AdminLevel=Operator"):
        check_can_read_all(private, None, user="ann", uid=1000)
    assert "AdminLevel=Operator" in sacct_problem("sacct: error: Access/permission denied")
    assert "no job accounting" in sacct_problem("Slurm accounting storage is disabled")


def test_windows_cover_the_recent_part_and_a_short_history_is_refused() -> None:
    assert windows_for(50_000) == (10, 1024)
    assert windows_for(100) == (3, 10)
    with pytest.raises(UserError, match="widen --days"):
        windows_for(40)


def test_the_self_check_declines_a_change_smaller_than_its_own_error() -> None:
    results = {"policies": {"multifactor": {"wait_mean": 1000.0}, "daemon:sjf": {"wait_mean": 950.0}}}
    good = {"wait_rel_error": 0.02, "start_spearman": 0.97}
    assert gate("daemon:sjf", "verdict: x", results, good) == ("daemon:sjf", "verdict: x", "")
    choice, line, why = gate("daemon:sjf", "verdict: x", results, {**good, "wait_rel_error": -0.08})
    assert choice == "multifactor" and "8.0%" in why and "5.0%" in why and line.startswith("verdict: leave")
    choice, _, why = gate("daemon:sjf", "verdict: x", results, {**good, "start_spearman": 0.5})
    assert choice == "multifactor" and "Spearman" in why


def test_the_daemon_fragment_runs_the_verdict_and_check_config_says_where_from(tmp_path: Path) -> None:
    from rltune_daemon.cli.daemon import recommendation
    from rltune_daemon.site.report import daemon_fragment

    res = tmp_path / "results.json"
    assert 'base_policy = "multifactor"' in daemon_fragment("multifactor", res)
    assert 'base_policy = "sjf"' in daemon_fragment("daemon:sjf", res)
    model = daemon_fragment(f"rltune:{tmp_path}/model", res)
    assert f'model = "{tmp_path}/model"' in model and f'recommended_by = "{res}"' in model
    res.write_text(json.dumps({"source": "live", "history": {"jobs": 5000, "days": 30.0},
                               "fidelity": {"wait_rel_error": -0.04, "start_spearman": 0.95},
                               "verdict": {"line": "verdict: leave Slurm alone (multifactor)"}}))
    said = recommendation(str(res))
    assert "5000 jobs over 30.0 days" in said and "-4.0%" in said and "leave Slurm alone" in said
    assert "run `rltune site` again" in recommendation(str(tmp_path / "gone.json"))


def test_from_a_folder_to_a_verdict_with_a_fine_tuned_model(tmp_path: Path) -> None:
    """The whole command away from the cluster, fine-tuning included (a smoke run of a few seconds):
    the model is trained on the older part only, judged on the recent windows with the rest, and its
    manifest records that result, which the daemon's model gate reads."""
    from rltune_daemon.site.report import write_site
    from rltune_daemon.site.run import SiteConfig, run_site

    root = Path(__file__).resolve().parents[2]
    write_dir(_exports(_sacct(n=120)), tmp_path / "export")
    cfg = SiteConfig(out=tmp_path / "out", minutes=0.05, source=tmp_path / "export", models=root / "models",
                     heuristics=("sjf",), jobs=1)
    site = run_site(cfg, "rltune site --from export")
    write_site(site, cfg.out)
    res = json.loads((cfg.out / "results.json").read_text())
    tuned = res["verdict"]["fine_tuned"]
    assert tuned and f"rltune:{tuned}" in res["evaluation"]["policies"]
    manifest = json.loads((Path(tuned) / "manifest.json").read_text())
    assert manifest["heldout"]["split"] == "recent" and manifest["heldout"]["windows"] >= 2
    assert manifest["hyperparameters"]["slurm_config"].endswith("config.txt")
    assert res["verdict"]["choice"] in res["evaluation"]["policies"]
    assert (cfg.out / "rltune-daemon.toml").exists() and (cfg.out / "report.md").exists()


def test_the_self_check_gives_the_same_numbers_in_two_processes_as_in_one() -> None:
    from rltune_daemon.domain.effects import EffectsConfig
    from rltune_daemon.policies.multifactor import Multifactor, MultifactorWeights
    from rltune_daemon.policies.slurm_priority import cluster_weights
    from rltune_daemon.sim.config import SimConfig
    from rltune_daemon.site.selfcheck import self_check

    h = load_history(_exports(_sacct()))
    site = Multifactor(cluster_weights(CONFIG, 1.0)[0])
    cfg = SimConfig(effects=EffectsConfig.pure(), bf_reservations=500, pass_period=30.0, main_at_events=True)
    one = self_check(h, site, Multifactor(MultifactorWeights()), cfg, workers=1)
    assert self_check(h, site, Multifactor(MultifactorWeights()), cfg, workers=2) == one
    assert one["wait_mean_recorded"] == 5.0 and one["unplaceable"]["share"] == 0.0
