#!/usr/bin/env bash
# A small synthetic GPU workload so the compose demo has a queue to tune: keeps about TARGET jobs
# pending, with mixed GPU counts/types and time limits (short sleeps), like the testbed trace.
set -u
TARGET="${WORKLOAD_PENDING:-8}"
specs=("gpu:1 10 40" "gpu:p100:2 60 120" "gpu:k80:1 20 60" "gpu:p100:4 120 150" "gpu:m40:1 5 20" "gpu:2 30 90")
while true; do
  pending=$(squeue -h -t PD 2>/dev/null | wc -l)
  if [ "$pending" -lt "$TARGET" ]; then
    read -r gres limit run <<< "${specs[RANDOM % ${#specs[@]}]}"
    runuser -u rltuser -- env SLURM_CONF="$SLURM_CONF" sbatch -Q -o /dev/null -D /tmp --gres="$gres" \
      -t "$limit" --wrap "sleep $run" || true
  fi
  sleep 3
done
