#!/usr/bin/env bash
# Container roles for docker-compose.slurm.yml:
#   slurm   start the local Slurm cluster (up.sh from the installed package), optionally feed it a
#           synthetic GPU workload (WORKLOAD=1), and stop it cleanly on SIGTERM
#   daemon  wait until slurmctld answers, then run rltune-daemon (config: /etc/rltune-daemon/)
set -euo pipefail
# a directory INSIDE the shared volume: up.sh recreates it on every start
STATE="${RLTUNE_SLURM_STATE:-/var/lib/rltune-slurm/cluster}"
export RLTUNE_SLURM_STATE="$STATE"
scripts() { /opt/rltune-daemon/bin/python -c 'from rltune_daemon.slurm.localcluster import script_dir; print(script_dir())'; }

case "${1:-slurm}" in
  slurm)
    dir="$(scripts)"
    # the state volume is shared with the daemon container (slurm.conf and the munge socket live there)
    TEST_USER=rltuser LINK_ETC=1 bash "$dir/up.sh"
    trap 'bash "$dir/down.sh"; exit 0' TERM INT
    export SLURM_CONF="$STATE/etc/slurm.conf"
    if [ "${WORKLOAD:-1}" = 1 ]; then /usr/local/lib/rltune/workload.sh & fi
    tail -F "$STATE/log/slurmctld.log" &
    wait
    ;;
  daemon)
    export SLURM_CONF="$STATE/etc/slurm.conf"
    for _ in $(seq 120); do
      if [ -f "$SLURM_CONF" ] && scontrol ping 2>/dev/null | grep -q UP; then break; fi
      sleep 1
    done
    exec rltune-daemon --config /etc/rltune-daemon/rltune-daemon.toml "${@:2}"
    ;;
  *)
    exec "$@"
    ;;
esac
