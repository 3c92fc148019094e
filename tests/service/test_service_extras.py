"""``pip install .`` is the daemon alone: the offline tools' libraries (the ``train`` extra: gymnasium,
matplotlib, tqdm, submitit) are made unimportable here, and the daemon's entry module, ``--help`` and a
``--backend sim`` cycle with a learned model still run; ``rltune`` names the extra a command needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAIN_EXTRAS = ("gymnasium", "matplotlib", "tqdm", "submitit")
# ``sys.modules[name] = None`` makes every later ``import name`` fail as if it were not installed
BLOCK = f"import sys\nfor _n in {TRAIN_EXTRAS!r}:\n    sys.modules[_n] = None\n"


def _run(main: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = BLOCK + f"from {main} import main\nsys.exit(main(sys.argv[1:]))\n"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RLTUNE_")} | (env or {})
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=180,
                          env=full_env, cwd=ROOT, check=False)


def test_daemon_entry_module_and_help_need_no_training_extras() -> None:
    res = _run("rltune_daemon.cli.daemon", "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: rltune-daemon") and "--dry-run" in res.stdout


def test_sim_dry_run_with_a_model_needs_no_training_extras() -> None:
    # run the model whatever its held-out record says: this is about what loading and scoring import
    res = _run("rltune_daemon.cli.daemon", "--backend", "sim", "--dry-run", "--once",
               env={"RLTUNE_MODEL": str(ROOT / "models" / "alibaba-sjf"), "RLTUNE_SIM__JOBS": "40",
                    "RLTUNE_METRICS__ENABLED": "false", "RLTUNE_RUN_MODEL_BEHIND_BASE": "true"})
    assert res.returncode == 0, res.stderr
    assert "rltune-daemon dry run: policy " in res.stdout and "FALLBACK" not in res.stdout
    assert "Traceback" not in res.stderr


def test_rltune_names_the_training_extra_in_one_line(tmp_path: Path) -> None:
    # evaluate needs one to build its options, train only once it runs
    for args in (("evaluate", "--trace", "testbed", "--policies", "fcfs"),
                 ("train", "--trace", "testbed", "--out", str(tmp_path / "m"))):
        res = _run("rltune_daemon.cli.main", *args)
        assert res.returncode == 2, res.stderr
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
        assert res.stderr.startswith(f"error: rltune {args[0]} needs the training extras")
        assert 'pip install "rltune-daemon[train]"' in res.stderr
    assert not (tmp_path / "m").exists()
    listed = _run("rltune_daemon.cli.main", "trace", "list")  # a command that needs none still runs
    assert listed.returncode == 0 and "testbed" in listed.stdout
