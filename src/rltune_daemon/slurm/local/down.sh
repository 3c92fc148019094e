#!/usr/bin/env bash
# Stop the local cluster started by up.sh, ONLY through the PIDs it recorded in $STATE/run/*.pid
# (each checked against the expected executable first), plus leftover slurmstepd processes whose
# working directory lies inside $STATE. Never kills by name.
#   RLTUNE_SLURM_STATE  state dir [/tmp/rltune-slurm]
#   PURGE=1             also delete the state dir afterwards
set -uo pipefail
STATE="${RLTUNE_SLURM_STATE:-/tmp/rltune-slurm}"
CONF="$STATE/etc/slurm.conf"
export SLURM_CONF="$CONF"
log() { printf '[down %s] %s\n' "$(date +%T)" "$*"; }
alive() { [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

stop_pid() { # stop_pid PIDFILE EXPECTED_EXE_SUBSTRING
  local f="$1" want="$2" pid exe
  [ -s "$f" ] || return 0
  pid="$(cat "$f")"
  if alive "$pid"; then
    exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
    case "$exe" in
      *"$want"*) ;;
      *) log "pid $pid from $f is '$exe', not $want: leaving it alone"; rm -f "$f"; return 0 ;;
    esac
    kill -TERM "$pid" 2>/dev/null
    # a SIGSTOPped daemon (tests freeze slurmctld) must be continued to act on SIGTERM
    kill -CONT "$pid" 2>/dev/null
    for _ in $(seq 200); do alive "$pid" || break; sleep 0.05; done
    if alive "$pid"; then log "pid $pid ($want) ignored SIGTERM for 10s: SIGKILL"; kill -KILL "$pid" 2>/dev/null; fi
  fi
  rm -f "$f"
}

[ -d "$STATE/run" ] || { log "nothing to stop in $STATE"; [ "${PURGE:-0}" = 1 ] && rm -rf "$STATE"; exit 0; }

# 1. cancel all jobs while the controller is up, so slurmstepd and job processes exit cleanly.
if [ -s "$STATE/run/slurmctld.pid" ] && alive "$(cat "$STATE/run/slurmctld.pid")" && command -v scancel >/dev/null; then
  kill -CONT "$(cat "$STATE/run/slurmctld.pid")" 2>/dev/null
  jobs="$(timeout 5 squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')"
  if [ -n "${jobs// /}" ]; then
    # shellcheck disable=SC2086
    timeout 5 scancel $jobs 2>/dev/null || true
    for _ in $(seq 50); do [ -z "$(timeout 5 squeue -h -t R,CG -o %A 2>/dev/null)" ] && break; sleep 0.1; done
  fi
fi

# 2. daemons: slurmd's first, then slurmctld (saves state on SIGTERM), slurmdbd, MariaDB, munged.
for f in "$STATE"/run/slurmd-*.pid; do [ -e "$f" ] && stop_pid "$f" slurmd; done
stop_pid "$STATE/run/slurmctld.pid" slurmctld
stop_pid "$STATE/run/slurmdbd.pid" slurmdbd
stop_pid "$STATE/run/mariadbd.pid" mariadbd
stop_pid "$STATE/run/munged.pid" munged

# 3. leftover job step daemons of THIS cluster (cwd inside $STATE), by PID.
for p in /proc/[0-9]*; do
  pid="${p#/proc/}"
  case "$(readlink "$p/exe" 2>/dev/null)" in *slurmstepd*) ;; *) continue ;; esac
  case "$(readlink "$p/cwd" 2>/dev/null)" in "$STATE"/*) ;; *) continue ;; esac
  log "killing leftover slurmstepd pid $pid"; kill -KILL "$pid" 2>/dev/null
done

# 4. job scripts those steps ran (a cancel that timed out on a long queue leaves them orphaned): only
#    processes whose command line names a script inside $STATE's spool.
for p in /proc/[0-9]*; do
  pid="${p#/proc/}"
  tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q -F "$STATE/spool/" || continue
  log "killing leftover job script pid $pid"; kill -KILL "$pid" 2>/dev/null
done

if [ -L /etc/slurm/slurm.conf ] && [ "$(readlink /etc/slurm/slurm.conf)" = "$CONF" ]; then
  rm -f /etc/slurm/slurm.conf
fi
[ "${PURGE:-0}" = 1 ] && rm -rf "$STATE"
log "down ($STATE)"
