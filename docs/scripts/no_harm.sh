#!/usr/bin/env bash
# Reproduces docs/results.md, "No job pays for the others": on the held-out windows (10 x 1024 jobs, seed
# 0; Lublin's SWF log: 10 windows over the whole log, no model was trained on it) of each workload, Slurm's
# multifactor, the daemon's default (no configuration), SJF reordering every job as the daemon did before
# (`reorder = "queue"`, the guard against submit order too, nothing kept in place) and the workload's
# shipped model under the daemon's defaults; then multifactor and the default under Slurm-like
# reservations (500 per partition). The table: docs/scripts/no_harm_table.py on the output directories.
# Usage: bash docs/scripts/no_harm.sh [TRACE ...]   (default: testbed philly helios alibaba lublin)
# LUBLIN: the path of lublin_256.swf (DIR-LAB/deep-batch-scheduler, data/; sha256 a394ab3d...c962).
set -euo pipefail
cd "$(dirname "$0")/../.."
RLTUNE=${RLTUNE:-.venv/bin/rltune}
OUT=${OUT:-docs/results/no-harm}
LUBLIN=${LUBLIN:-runs/lublin_256.swf}
model_of() { case $1 in testbed) echo models/testbed-multifactor ;; philly) echo models/philly-qssf ;;
             helios) echo models/helios-sjf ;; alibaba) echo models/alibaba-sjf ;; *) echo "" ;; esac; }
CFG=$(mktemp -d)
trap 'rm -rf "$CFG"' EXIT
printf 'reorder = "queue"\nstarvation_reference = "both"\nnext_in_line = 0\n' > "$CFG/every-job.toml"
traces=("$@")
[ ${#traces[@]} -gt 0 ] || traces=(testbed philly helios alibaba lublin)
for t in "${traces[@]}"; do
  where=(--trace "$t" --windows 10 --window-size 1024 --seed 0)
  [ "$t" = lublin ] && where=(--trace "$LUBLIN" --split all --windows 10 --window-size 1024 --seed 0)
  "$RLTUNE" evaluate "${where[@]}" --policies multifactor,default,daemon:sjf --config "$CFG/every-job.toml" \
    --out "$OUT/$t-easy"
  model=$(model_of "$t")
  if [ -n "$model" ]; then
    "$RLTUNE" evaluate "${where[@]}" --policies "rltune:$model" --out "$OUT/$t-easy-model"
  fi
  "$RLTUNE" evaluate "${where[@]}" --policies multifactor,default --bf-reservations 500 --out "$OUT/$t-bf500"
done
