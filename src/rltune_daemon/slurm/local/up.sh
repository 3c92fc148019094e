#!/usr/bin/env bash
# Start rltune-daemon's local Slurm 22.05 cluster (the RLTune paper's testbed shape) on THIS host:
#   apt install (only if missing) -> config in $STATE -> private munged -> slurmctld
#   -> one `slurmd -N <node>` per node -> wait until every node is IDLE.
# Root only (Debian 12). No systemd: daemons are started directly and their PIDs recorded in
# $STATE/run/*.pid so that down.sh stops exactly those. Nothing outside $STATE is written, except
# the Debian packages, the optional TEST_USER account and (LINK_ETC=1) /etc/slurm/slurm.conf.
#
# Env knobs (defaults in brackets):
#   RLTUNE_SLURM_STATE            state dir [/tmp/rltune-slurm]; wiped on every up unless KEEP_STATE=1
#   RLTUNE_SLURM_PORT             slurmctld port [6817]
#   RLTUNE_SLURMD_PORT            first of 5 consecutive slurmd ports [17001]
#   RLTUNE_SLURM_MESSAGE_TIMEOUT  MessageTimeout seconds [10]; clients retry a dead controller
#                                 for MessageTimeout-1 s, so tests use 3
#   KEEP_STATE=1                  keep jobs/node state of a previous run (job ids continue)
#   TEST_USER=name                non-root user to create for submissions [rltuser]; empty = none
#   LINK_ETC=1                    symlink /etc/slurm/slurm.conf -> $STATE/etc/slurm.conf [0]
#   UP_TIMEOUT=60                 seconds to wait for all nodes IDLE
#   WITH_DBD=1                    also slurmdbd + a private MariaDB (Age/Fairshare/TRES factors,
#                                 periodic priority recalculation, sacct). Ports: RLTUNE_SLURMDBD_PORT
#                                 [6819], RLTUNE_SLURM_MYSQL_PORT [3307]
#   RLTUNE_SLURM_CONF_OVERRIDES   lines `Key=Value` that replace every line setting Key in slurm.conf
#                                 (or are appended; `Key=` removes it); e.g. `rltune replay`'s
#                                 time-scaled parameters
set -euo pipefail

HERE="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
STATE="${RLTUNE_SLURM_STATE:-/tmp/rltune-slurm}"
CTLD_PORT="${RLTUNE_SLURM_PORT:-6817}"
SLURMD_PORT="${RLTUNE_SLURMD_PORT:-17001}"
MSG_TIMEOUT="${RLTUNE_SLURM_MESSAGE_TIMEOUT:-10}"
DBD_PORT="${RLTUNE_SLURMDBD_PORT:-6819}"
MYSQL_PORT="${RLTUNE_SLURM_MYSQL_PORT:-3307}"
WITH_DBD="${WITH_DBD:-0}"
TEST_USER="${TEST_USER-rltuser}"
UP_TIMEOUT="${UP_TIMEOUT:-60}"
CONF="$STATE/etc/slurm.conf"
MUNGE_DIR="$STATE/munge"
MUNGE_SOCKET="$MUNGE_DIR/munge.socket"
export SLURM_CONF="$CONF"

log() { printf '[up %s] %s\n' "$(date +%T)" "$*"; }
die() { printf '[up] ERROR: %s\n' "$*" >&2; exit 1; }
alive() { # alive PID: running and not a zombie
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
}
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
is_int() { [[ "$1" =~ ^[0-9]+$ ]]; }

[ "$(id -u)" = 0 ] || die "must run as root (it starts slurmctld/slurmd and creates device files)"
for v in CTLD_PORT SLURMD_PORT MSG_TIMEOUT DBD_PORT MYSQL_PORT UP_TIMEOUT; do
  is_int "${!v}" || die "$v must be an integer, got '${!v}'"
done
case "$STATE" in /|/tmp|/etc|/usr|/var|/root|/home) die "refusing state dir '$STATE'";; esac
T0=$(date +%s.%N)

# ---- 1. packages (only when missing) ----------------------------------------------------
PKGS="slurmctld slurmd slurm-client munge"
[ "$WITH_DBD" = 1 ] && PKGS="$PKGS slurmdbd mariadb-server"
need_install=0
for b in slurmctld slurmd sbatch scontrol munged mungekey; do command -v $b >/dev/null || need_install=1; done
if [ "$WITH_DBD" = 1 ]; then for b in slurmdbd mariadbd; do command -v $b >/dev/null || need_install=1; done; fi
if [ "$need_install" = 1 ]; then
  command -v apt-get >/dev/null || die "Slurm is not installed and there is no apt-get (need: $PKGS)"
  log "installing $PKGS"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
fi
T1=$(date +%s.%N)
slurmctld -V | grep -q '^slurm' || die "slurmctld not usable"

# ---- 2. already up? ports free? -----------------------------------------------------------
if [ -f "$STATE/run/slurmctld.pid" ] && alive "$(cat "$STATE/run/slurmctld.pid")"; then
  die "a cluster from $STATE is already running (run down.sh first)"
fi
for p in "$CTLD_PORT" $(seq "$SLURMD_PORT" $((SLURMD_PORT + 4))); do
  port_busy "$p" && die "port $p is in use (another Slurm?); set RLTUNE_SLURM_PORT/RLTUNE_SLURMD_PORT"
done

# ---- 3. state dir + config --------------------------------------------------------------
[ "${KEEP_STATE:-0}" = 1 ] || rm -rf "$STATE"
mkdir -p "$STATE"/{etc,state,spool,log,run,dev,out}
chmod 0755 "$STATE"
chmod 1777 "$STATE/out"                        # world-writable place for job stdout (sbatch -o)
HOST="$(hostname -s)"
render() { # render TEMPLATE OUT
  sed -e "s|@STATE@|$STATE|g" -e "s|@HOST@|$HOST|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" \
      -e "s|@MSG_TIMEOUT@|$MSG_TIMEOUT|g" -e "s|@MUNGE_SOCKET@|$MUNGE_SOCKET|g" \
      -e "s|@DBD_PORT@|$DBD_PORT|g" -e "s|@MYSQL_PORT@|$MYSQL_PORT|g" \
      -e "s|@P1@|$SLURMD_PORT|g" -e "s|@P2@|$((SLURMD_PORT + 1))|g" -e "s|@P3@|$((SLURMD_PORT + 2))|g" \
      -e "s|@P4@|$((SLURMD_PORT + 3))|g" -e "s|@P5@|$((SLURMD_PORT + 4))|g" "$1" > "$2"
}
render "$HERE/slurm.conf.in" "$CONF"
render "$HERE/gres.conf.in" "$STATE/etc/gres.conf"
if [ "$WITH_DBD" = 1 ]; then
  sed -i -e '/#NODBD$/d' -e 's/^#DBD //' "$CONF"
  render "$HERE/slurmdbd.conf.in" "$STATE/etc/slurmdbd.conf"
  chmod 0600 "$STATE/etc/slurmdbd.conf"
fi
# Overrides last, so they win over the template and the WITH_DBD lines alike. Keys are plain words and
# values carry no '|' (the sed delimiter): anything else is refused rather than half-applied.
if [ -n "${RLTUNE_SLURM_CONF_OVERRIDES:-}" ]; then
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    key="${line%%=*}"
    [[ "$key" =~ ^[A-Za-z][A-Za-z0-9]*$ ]] && [[ "$line" == *=* ]] && [[ "$line" != *"|"* ]] \
      || die "bad slurm.conf override '$line' (expected Key=Value)"
    sed -i -E "/^[[:space:]]*${key}[[:space:]]*=/Id" "$CONF"
    [ -z "${line#*=}" ] || printf '%s\n' "$line" >> "$CONF"   # `Key=` alone: only remove it
  done <<< "$RLTUNE_SLURM_CONF_OVERRIDES"
fi
# Fake GPU device nodes for every File= in gres.conf (char 1,3 == /dev/null).
for spec in $(sed -n 's/.*File=\([^ ]*\).*/\1/p' "$STATE/etc/gres.conf"); do
  for dev in $(scontrol show hostnames "$spec"); do
    [ -e "$dev" ] || mknod "$dev" c 1 3
  done
done
if [ "${LINK_ETC:-0}" = 1 ]; then
  mkdir -p /etc/slurm
  if [ ! -e /etc/slurm/slurm.conf ] || [ -L /etc/slurm/slurm.conf ]; then
    ln -sfn "$CONF" /etc/slurm/slurm.conf
  else
    log "WARNING: /etc/slurm/slurm.conf is a real file; not linking (use SLURM_CONF=$CONF)"
  fi
fi
if [ -n "$TEST_USER" ] && ! id "$TEST_USER" >/dev/null 2>&1; then
  # two clusters starting at once (pytest-xdist workers) may race here: the loser finds the user
  useradd -m -s /bin/bash "$TEST_USER" 2>/dev/null || id "$TEST_USER" >/dev/null || die "cannot create $TEST_USER"
fi

# ---- 4. private munged (own key + socket; the host's munge, if any, is left alone) ---------
mkdir -p "$MUNGE_DIR"
[ -s "$MUNGE_DIR/munge.key" ] || mungekey --create --keyfile="$MUNGE_DIR/munge.key" >/dev/null
chown -R munge:munge "$MUNGE_DIR"
chmod 0755 "$MUNGE_DIR"; chmod 0400 "$MUNGE_DIR/munge.key"
runuser -u munge -- /usr/sbin/munged --socket="$MUNGE_SOCKET" --key-file="$MUNGE_DIR/munge.key" \
  --pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" --seed-file="$MUNGE_DIR/munged.seed"
for _ in $(seq 50); do munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1 && break; sleep 0.05; done
munge -n -S "$MUNGE_SOCKET" | unmunge -S "$MUNGE_SOCKET" >/dev/null || die "munged did not come up ($MUNGE_DIR/munged.log)"
cp "$MUNGE_DIR/munged.pid" "$STATE/run/munged.pid"

# ---- 4b. MariaDB + slurmdbd (optional) ------------------------------------------------------
if [ "$WITH_DBD" = 1 ]; then
  port_busy "$DBD_PORT" && die "slurmdbd port $DBD_PORT is in use"
  port_busy "$MYSQL_PORT" && die "MariaDB port $MYSQL_PORT is in use"
  mkdir -p "$STATE/mysql" "$STATE/run/mysqld"; chown mysql:mysql "$STATE/mysql" "$STATE/run/mysqld"
  mariadb-install-db --user=mysql --datadir="$STATE/mysql" --auth-root-authentication-method=socket \
    > "$STATE/log/mariadb-install.log" 2>&1 \
    || die "mariadb-install-db failed: $(tail -3 "$STATE/log/mariadb-install.log" | tr '\n' ' ')"
  touch "$STATE/log/mariadb.err"; chown mysql:mysql "$STATE/log/mariadb.err"
  setsid mariadbd --user=mysql --datadir="$STATE/mysql" --socket="$STATE/run/mysqld/mysqld.sock" \
    --pid-file="$STATE/run/mysqld/mariadbd.pid" --bind-address=127.0.0.1 --port="$MYSQL_PORT" \
    --log-error="$STATE/log/mariadb.err" --innodb-buffer-pool-size=64M </dev/null >/dev/null 2>&1 &
  deadline=$(( $(date +%s) + 30 ))
  until mariadb --socket="$STATE/run/mysqld/mysqld.sock" -e 'select 1' >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || break; sleep 0.2
  done
  mariadb --socket="$STATE/run/mysqld/mysqld.sock" -e "
    CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || { tail "$STATE/log/mariadb.err" >&2; die "mariadb not up"; }
  cp "$STATE/run/mysqld/mariadbd.pid" "$STATE/run/mariadbd.pid"
  slurmdbd                                     # finds slurmdbd.conf next to $SLURM_CONF; daemonizes
  deadline=$(( $(date +%s) + 30 ))
  until sacctmgr -n list cluster >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || break; sleep 0.2
  done
  sacctmgr -n list cluster >/dev/null 2>&1 || { tail "$STATE/log/slurmdbd.log" >&2; die "slurmdbd not up"; }
  sacctmgr -i add cluster rltune >/dev/null
  sacctmgr -i add account research Description=rltune Organization=rltune >/dev/null
  sacctmgr -i add user root Account=research >/dev/null
  if [ -n "$TEST_USER" ]; then sacctmgr -i add user "$TEST_USER" Account=research >/dev/null; fi
  log "slurmdbd up (pid $(cat "$STATE/run/slurmdbd.pid")), MariaDB on 127.0.0.1:$MYSQL_PORT"
fi

# ---- 5. slurmctld -----------------------------------------------------------------------
slurmctld -f "$CONF"                            # daemonizes; pid -> $STATE/run/slurmctld.pid
for _ in $(seq 200); do scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.05; done
scontrol ping | grep -q 'is UP' || { tail -20 "$STATE/log/slurmctld.log" >&2; die "slurmctld not up"; }

# ---- 6. one slurmd per node ---------------------------------------------------------------
NODES="$(sinfo -h -N -o '%N' | sort -u)"
for n in $NODES; do
  mkdir -p "$STATE/spool/slurmd-$n"           # must exist before start (domain socket dir)
  slurmd -N "$n" -f "$CONF"                   # daemonizes; pid -> $STATE/run/slurmd-$n.pid
done

# ---- 7. wait for all nodes IDLE -----------------------------------------------------------
deadline=$(( $(date +%s) + UP_TIMEOUT ))
while :; do
  states="$(sinfo -h -N -o '%t' 2>/dev/null | sort -u | tr '\n' ' ')"
  [ "$states" = "idle " ] && break
  [ "$(date +%s)" -lt "$deadline" ] || { sinfo -N -l >&2; sinfo -R >&2; die "nodes not idle after ${UP_TIMEOUT}s"; }
  sleep 0.05
done
T2=$(date +%s.%N)
for n in $NODES; do [ -s "$STATE/run/slurmd-$n.pid" ] || die "no pidfile for slurmd $n"; done

printf 'export SLURM_CONF=%s\n' "$CONF" > "$STATE/env"
log "cluster up: $(echo "$NODES" | wc -w) nodes idle, slurmctld 127.0.0.1:$CTLD_PORT; install/check $(awk "BEGIN{printf \"%.1f\", $T1-$T0}")s, daemons $(awk "BEGIN{printf \"%.1f\", $T2-$T1}")s"
log "use: source $STATE/env"
