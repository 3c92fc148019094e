"""Hand-computed scores for every baseline (paper Table 5; lower runs first)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rltune_daemon.domain import ClusterArrays, ClusterSpec, Job, JobTable, NodeSpec
from rltune_daemon.domain.queue import QueueView
from rltune_daemon.policies import make_policy
from rltune_daemon.policies.fairshare import UsageTracker
from rltune_daemon.policies.multifactor import Multifactor, MultifactorWeights

CLUSTER = ClusterSpec("c", (NodeSpec("n1", "v100", 8, 32, 64000), NodeSpec("n2", "v100", 8, 32, 64000)))
# submit 100 s, asked 3600 s, 4 GPUs; and submit 500 s, asked 60 s, 1 GPU; evaluated at now = 1000 s
JOBS = [Job("a", 100.0, 4, 3600.0, runtime=1000.0, user="u1"),
        Job("b", 500.0, 1, 60.0, runtime=30.0, user="u2")]


def view(now: float = 1000.0) -> QueueView:
    table = JobTable.from_jobs(JOBS, CLUSTER)
    return QueueView(table, np.arange(2), now, ClusterArrays.from_spec(CLUSTER))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("fcfs", [100.0, 500.0]),
        ("sjf", [3600.0, 60.0]),
        # -(wt/rt)^3 * nt: a waited 900 s of 3600 s asked; b waited 500 s of 60 s asked
        ("wfp3", [-(0.25**3) * 4, -((500 / 60) ** 3) * 1]),
        # -wt / (log2(nt + 1) * rt)
        ("unicep", [-900 / (math.log2(5) * 3600), -500 / (math.log2(2) * 60)]),
        # log10(rt) * nt + 870 * log10(st)
        ("f1", [math.log10(3600) * 4 + 870 * 2.0, math.log10(60) * 1 + 870 * math.log10(500)]),
    ],
)
def test_heuristic_scores_by_hand(name: str, expected: list[float]) -> None:
    got = make_policy(name).scores(view())
    assert got == pytest.approx(expected, rel=1e-9)


def test_unicep_finite_for_one_gpu_jobs() -> None:
    assert np.isfinite(make_policy("unicep").scores(view())).all()


def test_f1_guards_submit_time_zero() -> None:
    table = JobTable.from_jobs([Job("z", 0.0, 2, 100.0, runtime=10.0)], CLUSTER)
    score = make_policy("f1").scores(QueueView(table, np.arange(1), 10.0))
    assert score == pytest.approx([math.log10(100) * 2])


def test_multifactor_by_hand() -> None:
    # fair share: u1 used 8 GPU x 100 s, u2 nothing -> U(u1)=1, U(u2)=0, S=1/2
    usage = UsageTracker(n_users=2, half_life=1e12)
    usage.submit(0)
    usage.submit(1)
    usage.start(0, 8, 0.0)
    usage.finish(0, 8, 0.0, 100.0)
    v = view()
    v = QueueView(v.table, v.idx, v.now, v.cluster, usage)
    prio = Multifactor().priority(v)
    age = [900 / (7 * 86400), 500 / (7 * 86400)]
    size = [1 - 3600 / (7 * 86400), 1 - 60 / (7 * 86400)]
    fs = [2 ** (-1 / 0.5), 1.0]
    want = [math.floor(1000 * (a + f + s + 1.0)) for a, f, s in zip(age, fs, size, strict=True)]
    assert prio.tolist() == want
    assert Multifactor().scores(v).tolist() == [-w for w in want]


def test_multifactor_gpu_size_mode_favours_large() -> None:
    mf = Multifactor(MultifactorWeights(age=0, fairshare=0, partition=0, size_mode="gpus"))
    prio = mf.priority(view())
    assert prio.tolist() == [math.floor(1000 * 4 / 16), math.floor(1000 * 1 / 16)]


def test_multifactor_uses_live_slurm_priority_without_fairshare_source() -> None:
    table = JobTable.from_jobs(JOBS, CLUSTER, states=None)
    object.__setattr__(table, "priority", np.array([500.0, 900.0]))
    scores = Multifactor().scores(QueueView(table, np.arange(2), 1000.0))
    assert scores.tolist() == [-500.0, -900.0]


def test_fairshare_decays_with_half_life() -> None:
    u = UsageTracker(n_users=2, half_life=100.0)
    u.submit(0)
    u.submit(1)
    u.start(0, 1, 0.0)
    u.finish(0, 1, 0.0, 10.0)
    assert u.usage(10.0)[0] == pytest.approx(10.0)
    assert u.usage(110.0)[0] == pytest.approx(5.0)
    # running jobs count as they run
    u.start(1, 2, 110.0)
    assert u.usage(120.0)[1] == pytest.approx(20.0)


def test_qssf_predicts_from_history_then_user_then_requested() -> None:
    qssf = make_policy("qssf")
    hist = [Job(f"h{i}", float(i), 4, 9999.0, runtime=100.0 * (i + 1), user="u1") for i in range(3)]
    hist.append(Job("h9", 5.0, 1, 9999.0, runtime=50.0, user="u1"))
    hist.append(Job("h10", 6.0, 8, 9999.0, runtime=1000.0, user="u2"))
    qssf.fit_history(JobTable.from_jobs(hist, CLUSTER))
    jobs = [Job("x", 1.0, 4, 3600.0, user="u1"),   # same user and size: mean(100, 200, 300) = 200
            Job("y", 1.0, 2, 3600.0, user="u1"),   # same user: mean(100, 200, 300, 50) = 162.5
            Job("z", 1.0, 2, 3600.0, user="new")]  # unknown user: all recent runs, mean = 330
    table = JobTable.from_jobs(jobs, CLUSTER)
    scores = qssf.scores(QueueView(table, np.arange(3), 10.0))
    assert scores.tolist() == pytest.approx([4 * 200.0, 2 * 162.5, 2 * 330.0])


def test_unknown_policy_is_a_one_line_error() -> None:
    from rltune_daemon.errors import UserError

    with pytest.raises(UserError, match="unknown policy 'lifo'"):
        make_policy("lifo")
