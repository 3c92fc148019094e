# rltune-daemon: every target sets itself up; on a fresh machine `make demo` and `make test` are all you need.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/pip --disable-pip-version-check -q
DEB_PKGS := slurmctld slurmd slurm-client munge prometheus
# only the tests need accounting (sacct for the QSSF history tests): not installed by `make demo`
TEST_DEB_PKGS := slurmdbd mariadb-server
NPROC := $(shell nproc 2>/dev/null || echo 2)

.PHONY: setup system-deps test-deps debs demo test test-versions lint typecheck unit fuzz soak bench clean

setup: $(STAMP) system-deps

# Python environment: pip + venv (uv/poetry do not see the local CPU torch wheel), pinned by constraints.txt.
# The daemon alone is `pip install .`; the demo and the tests also need the offline tools (train) and dev.
$(STAMP): pyproject.toml constraints.txt
	@$(PY) -m venv --help >/dev/null 2>&1 || { echo "python3 venv module missing: run 'apt-get install -y python3-venv' (as root)"; exit 1; }
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -c constraints.txt "torch==2.13.0"
	$(PIP) install -c constraints.txt -e ".[dev,train]"
	@touch $@

# Debian packages for the real-Slurm and Prometheus integration tests and the live demo.
# Installed only when running as root and missing; otherwise those tests are skipped with a reason.
system-deps:
	@$(MAKE) --no-print-directory debs PKGS="$(DEB_PKGS)"

test-deps:
	@$(MAKE) --no-print-directory debs PKGS="$(TEST_DEB_PKGS)"

debs:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for p in $(PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && \
	    apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi; \
	else echo "not root or no apt-get: Slurm/Prometheus integration tests will be skipped"; fi

demo: setup
	$(BIN)/python -m rltune_daemon.demo

lint: $(STAMP)
	$(BIN)/ruff check src tests

typecheck: $(STAMP)
	$(BIN)/mypy --strict src

unit: $(STAMP)
	$(BIN)/pytest -q -n $(NPROC) -m "not slurm and not prometheus"

test: setup test-deps lint typecheck
	$(BIN)/pytest -q -n $(NPROC) --durations=15

# The real-Slurm part of the suite (plus probe, replay, an Operator under rl_enable at 10,000 pending, pyslurm
# on 25.11) on each release in VERSIONS, built once from SLURM_SRC (a SchedMD/slurm git clone, a release
# tarball or a directory of them) into ~/.cache/rltune-slurm; "22.05" is Debian's own. Not part of `make test`.
# Results: docs/results/slurm-versions/. SKIP="operator pyslurm" leaves the long steps out.
VERSIONS ?= 23.11 24.11 25.11
test-versions: setup test-deps
	$(BIN)/python tests/versions/run_versions.py --src "$(SLURM_SRC)" --versions "$(VERSIONS)" --skip "$(SKIP)"

# hypothesis fuzzing of every Slurm-output parser and trace loader at 10,000 examples each (make test runs 300)
fuzz: $(STAMP)
	RLTUNE_FUZZ_EXAMPLES=10000 $(BIN)/pytest -q -p no:cacheprovider -n $(NPROC) tests/fuzz

# the daemon run long: 24 simulated hours through --backend sim, then (root) 10,000 pending jobs on the
# local Slurm for 40 live cycles; memory, fds, state file, users' sbatch, restore -> docs/results/soak
soak: setup
	$(BIN)/rltune bench soak --sim-hours 24 --live-jobs $$([ "$$(id -u)" = 0 ] && echo 10000 || echo 0) \
	  --live-cycles 40 --out docs/results/soak

bench: $(STAMP)
	$(BIN)/rltune bench sim --trace philly --policy fcfs

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
