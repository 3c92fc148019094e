#!/usr/bin/env bash
# Build one Slurm release (e.g. 25.11) into a cache prefix, once; print the prefix on stdout.
#   build.sh VERSION
# Where the source comes from (SLURM_SRC, required):
#   - a git clone of SchedMD/slurm (bare or not): the newest release tag slurm-MM-mm-P-1 of VERSION
#   - a directory of release tarballs (slurm-MM.mm.P.tar.bz2): the newest one of VERSION
#   - one release tarball, or one unpacked source tree: it must be VERSION (read from its META file)
# The build lands in $RLTUNE_SLURM_CACHE/<full version> [~/.cache/rltune-slurm] and is reused while its
# stamp file is there: a second `make test-versions` builds nothing. Build dependencies (Debian 12):
# the -dev packages in DEB_BUILD_DEPS, installed when missing and running as root.
set -euo pipefail

VERSION="${1:-}"
SRC="${SLURM_SRC:-}"
CACHE="${RLTUNE_SLURM_CACHE:-$HOME/.cache/rltune-slurm}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
DEB_BUILD_DEPS="gcc make pkg-config bzip2 libmunge-dev munge libjson-c-dev libyaml-dev libhttp-parser-dev
  libjwt-dev libmariadb-dev libhwloc-dev libdbus-1-dev libcurl4-openssl-dev libpam0g-dev libreadline-dev"

log() { printf '[build %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { printf '[build] ERROR: %s\n' "$*" >&2; exit 1; }

[[ "$VERSION" =~ ^[0-9]{2}\.[0-9]{2}$ ]] || die "give a release series like 25.11 (got '$VERSION')"
[ -n "$SRC" ] || die "set SLURM_SRC to a SchedMD/slurm git clone, a release tarball or a directory of them"
[ -e "$SRC" ] || die "SLURM_SRC=$SRC does not exist"
MAJ="${VERSION%.*}"; MIN="${VERSION#*.}"

# ---- 1. which exact release ------------------------------------------------------------------
meta_version() { sed -n 's/^[[:space:]]*Version:[[:space:]]*\([0-9.]*\).*/\1/p' | head -1; }
KIND=""; FULL=""; REF=""
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  KIND=git
  REF="$(git -C "$SRC" tag -l "slurm-$MAJ-$MIN-*-1" | sort -V | tail -1)"
  [ -n "$REF" ] || die "no release tag slurm-$MAJ-$MIN-*-1 in $SRC (git fetch --tags?)"
  FULL="$(git -C "$SRC" show "$REF:META" | meta_version)"
elif [ -d "$SRC" ] && [ -f "$SRC/META" ]; then
  KIND=tree; REF="$SRC"; FULL="$(meta_version < "$SRC/META")"
  [[ "$FULL" == "$VERSION".* ]] || die "$SRC is Slurm $FULL, not $VERSION"
elif [ -d "$SRC" ]; then
  KIND=tarball
  REF="$(find "$SRC" -maxdepth 1 -name "slurm-$VERSION.*.tar.bz2" | sort -V | tail -1)"
  [ -n "$REF" ] || die "no slurm-$VERSION.*.tar.bz2 in $SRC"
elif [ -f "$SRC" ]; then
  KIND=tarball; REF="$SRC"
else
  die "SLURM_SRC=$SRC is neither a git clone, a source tree, a tarball nor a directory of tarballs"
fi
if [ "$KIND" = tarball ]; then
  FULL="$(tar -xOf "$REF" --wildcards '*/META' 2>/dev/null | meta_version)"
  [[ "$FULL" == "$VERSION".* ]] || die "$REF is Slurm '${FULL:-unknown}', not $VERSION"
fi
[ -n "$FULL" ] || die "cannot tell the Slurm version of $SRC"
PREFIX="$CACHE/$FULL"
STAMP="$PREFIX/.rltune-built"
if [ -f "$STAMP" ] && [ -x "$PREFIX/sbin/slurmctld" ]; then
  log "Slurm $FULL already built in $PREFIX"
  echo "$PREFIX"; exit 0
fi

# ---- 2. build dependencies -------------------------------------------------------------------
missing=""
for p in $DEB_BUILD_DEPS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || die "missing build dependencies:$missing (install them as root)"
  log "installing build dependencies:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# ---- 3. unpack, configure, make, install ----------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rltune-slurm-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
case "$KIND" in
  git) git -C "$SRC" archive --format=tar --prefix=src/ "$REF" | tar -x -C "$WORK" ;;
  tree) cp -a "$SRC" "$WORK/src" ;;
  tarball) mkdir "$WORK/src"; tar -xjf "$REF" -C "$WORK/src" --strip-components=1 ;;
esac
log "building Slurm $FULL from $REF into $PREFIX ($JOBS jobs; about 5 minutes on 2 cores)"
rm -rf "$PREFIX"; mkdir -p "$PREFIX"
cd "$WORK/src"
# --enable-multiple-slurmd: the local cluster runs five `slurmd -N` on one host.
# --disable-static: nothing links libslurm statically, and it halves the build.
./configure --prefix="$PREFIX" --sysconfdir="$PREFIX/etc" --enable-multiple-slurmd --disable-static \
  --disable-debug > "$WORK/configure.log" 2>&1 \
  || { tail -30 "$WORK/configure.log" >&2; die "configure failed for $FULL"; }
make -j"$JOBS" > "$WORK/make.log" 2>&1 || { grep -m5 -B2 -A8 'error' "$WORK/make.log" >&2; die "make failed for $FULL"; }
make install > "$WORK/install.log" 2>&1 || { tail -30 "$WORK/install.log" >&2; die "make install failed for $FULL"; }
printf 'version=%s\nsource=%s\nbuilt=%s\n' "$FULL" "$REF" "$(date -u +%FT%TZ)" > "$STAMP"
log "Slurm $FULL built in $PREFIX"
echo "$PREFIX"
