#!/usr/bin/env bash
# Reproduces docs/results.md, "The default": on the held-out windows (10 x 1024 jobs, seed 0; Lublin's
# SWF log: 10 windows over the whole log, no model was trained on it) of each workload, Slurm's
# multifactor, the daemon's default (no configuration: base_policy multifactor, writes no SiteFactor),
# SJF as a site may switch it on (`base_policy = "sjf"`: within size classes, the first 3 blocked jobs
# of each partition kept in place, the guard against Slurm's order) and the workload's shipped model
# under the daemon's defaults. BF500=1: multifactor, the default and SJF under Slurm-like reservations
# (500 per partition) too. The table: docs/scripts/no_harm_table.py on the output directories.
# Usage: bash docs/scripts/no_harm.sh [TRACE ...]   (default: testbed philly helios alibaba lublin)
# LUBLIN: the path of lublin_256.swf (DIR-LAB/deep-batch-scheduler, data/; sha256 a394ab3d...c962).
set -euo pipefail
cd "$(dirname "$0")/../.."
RLTUNE=${RLTUNE:-.venv/bin/rltune}
OUT=${OUT:-docs/results/no-harm}
LUBLIN=${LUBLIN:-runs/lublin_256.swf}
model_of() { case $1 in testbed) echo models/testbed-multifactor ;; philly) echo models/philly-qssf ;;
             helios) echo models/helios-sjf ;; alibaba) echo models/alibaba-sjf ;; *) echo "" ;; esac; }
traces=("$@")
[ ${#traces[@]} -gt 0 ] || traces=(testbed philly helios alibaba lublin)
for t in "${traces[@]}"; do
  where=(--trace "$t" --windows 10 --window-size 1024 --seed 0)
  [ "$t" = lublin ] && where=(--trace "$LUBLIN" --split all --windows 10 --window-size 1024 --seed 0)
  policies=multifactor,default,daemon:sjf
  model=$(model_of "$t")
  if [ -n "$model" ] && [ -d "$model" ]; then policies="$policies,rltune:$model"; fi
  "$RLTUNE" evaluate "${where[@]}" --policies "$policies" --out "$OUT/$t-easy"
  if [ "${BF500:-0}" = 1 ]; then
    "$RLTUNE" evaluate "${where[@]}" --policies multifactor,default,daemon:sjf --bf-reservations 500 \
      --out "$OUT/$t-bf500"
  fi
done
