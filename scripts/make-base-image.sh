#!/usr/bin/env bash
# Build the offline base image tbflow/base:bookworm without any container
# registry: debootstrap a minimal Debian bookworm (python3 + pytest) from the
# machine's own Debian mirror and `docker import` it.
#
# Usage: scripts/make-base-image.sh [--if-missing]
#   --if-missing  do nothing when the image already exists (checked after
#                 taking the build lock, so concurrent callers build it once)
#
# Environment:
#   TBFLOW_DEBIAN_MIRROR  Debian mirror URL; when set it wins, otherwise the
#                         mirror is read from the machine's apt sources.
#   TBFLOW_BASE_IMAGE     image reference (default tbflow/base:bookworm)
#
# The image deliberately contains no procps (no `ps`): minbase does not pull
# it in and tests rely on its absence.
set -euo pipefail

IMAGE="${TBFLOW_BASE_IMAGE:-tbflow/base:bookworm}"
SUITE=bookworm
INCLUDE=python3,python3-pytest

log() { printf 'tbflow make-base-image: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

if_missing=0
case "${1:-}" in
  --if-missing) if_missing=1 ;;
  "") ;;
  *) die "unknown argument: $1 (usage: $0 [--if-missing])" ;;
esac

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap needs it)"
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] \
  || die "debootstrap is not installed (apt-get install debootstrap)"
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed)"

# One build at a time on this machine.
lock="${TMPDIR:-/tmp}/tbflow-make-base-image.lock"
exec 9>"$lock"
if ! flock -n 9; then
  log "another build holds $lock, waiting"
  flock -w 1800 9 || die "timed out waiting for $lock"
fi

if [ "$if_missing" -eq 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "$IMAGE already present"
  exit 0
fi

# --- find the Debian mirror (never hard-coded here) -------------------------
# deb822 sources: first URI of the first stanza whose Suites include the bare
# suite (so a -security stanza listed first is skipped), else the first URI.
mirror_from_deb822() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk -v suite="$SUITE" '
      function flush() {
        if (uri != "" && enabled && first == "") first = uri
        if (uri != "" && enabled && match_suite && best == "") best = uri
        uri = ""; match_suite = 0; enabled = 1
      }
      BEGIN { enabled = 1 }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      tolower($1) == "uris:"    { uri = $2 }
      tolower($1) == "suites:"  { for (i = 2; i <= NF; i++) if ($i == suite) match_suite = 1 }
      tolower($1) == "enabled:" { if (tolower($2) == "no") enabled = 0 }
      END { flush(); if (best != "") print best; else if (first != "") print first }
    ' "$f"
  done | head -n1
}

# one-line format: "deb [opts] URI suite comp..." -> URI
mirror_from_list() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    sed -n -e 's/^[ \t]*deb[ \t]\+\(\[[^]]*\][ \t]\+\)\?\([^ \t]\+\).*/\2/p' "$f"
  done | head -n1
}

mirror="${TBFLOW_DEBIAN_MIRROR:-}"
[ -n "$mirror" ] || mirror="$(mirror_from_deb822 || true)"
[ -n "$mirror" ] || mirror="$(mirror_from_list || true)"
[ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources* ; set TBFLOW_DEBIAN_MIRROR"
mirror="${mirror%/}"

# --- build rootfs ------------------------------------------------------------
workdir="$(mktemp -d "${TMPDIR:-/tmp}/tbflow-base.XXXXXX")"
rootfs="$workdir/rootfs"

cleanup() {
  local rc=$?
  # debootstrap mounts proc/sys inside the target; unmount before deleting.
  if [ -d "$rootfs" ]; then
    awk -v r="$rootfs" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r \
      | while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  rm -rf --one-file-system "$workdir" 2>/dev/null || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "debootstrap $SUITE (minbase, +$INCLUDE) into $rootfs (takes about a minute)"
t0=$SECONDS
if ! debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$rootfs" "$mirror" \
      >"$workdir/debootstrap.log" 2>&1; then
  tail -n 30 "$workdir/debootstrap.log" >&2 || true
  [ -f "$rootfs/debootstrap/debootstrap.log" ] && tail -n 30 "$rootfs/debootstrap/debootstrap.log" >&2
  die "debootstrap failed"
fi
log "debootstrap done in $((SECONDS - t0)) s"

# Sanity checks before import.
chroot "$rootfs" python3 -c 'import pytest' || die "python3/pytest missing in rootfs"
if chroot "$rootfs" sh -c 'command -v ps' >/dev/null 2>&1; then
  die "rootfs unexpectedly contains ps (procps); tests rely on its absence"
fi

# Keep it small: no apt lists/caches, logs or host-specific files.
rm -rf "$rootfs"/var/lib/apt/lists/* \
       "$rootfs"/var/cache/apt/*.bin \
       "$rootfs"/var/cache/apt/archives/*.deb \
       "$rootfs"/var/cache/apt/archives/partial/* \
       "$rootfs"/var/cache/debconf/*-old \
       "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* \
       "$rootfs"/tmp/* "$rootfs"/root/.cache
: >"$rootfs/etc/resolv.conf" 2>/dev/null || true   # docker supplies these
: >"$rootfs/etc/hostname" 2>/dev/null || true

# --- import ------------------------------------------------------------------
changes=(
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  -c 'ENV LANG=C.UTF-8'
  -c 'CMD ["/bin/bash"]'
)
# LABEL via `import -c` is engine-dependent: probe with an empty tarball.
if probe="$(tar -c -T /dev/null | docker import -c 'LABEL tbflow.base=1' - 2>/dev/null)"; then
  docker rmi "$probe" >/dev/null 2>&1 || true
  changes+=(-c 'LABEL tbflow.base=1')
else
  log "engine does not accept LABEL on import; image built without label"
fi

old_id="$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
log "importing as $IMAGE"
t0=$SECONDS
new_id="$(tar --numeric-owner -C "$rootfs" -c . | docker import "${changes[@]}" -m 'tbflow base (debootstrap minbase)' - "$IMAGE")"
log "import done in $((SECONDS - t0)) s: $new_id"

# Drop the image this one replaced (fails harmlessly if something still uses it).
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  docker rmi "$old_id" >/dev/null 2>&1 || true
fi

docker run --rm --network none "$IMAGE" python3 -c 'import pytest, sys; print("python", sys.version.split()[0], "pytest", pytest.__version__)' >&2 \
  || die "smoke test of $IMAGE failed"
log "$IMAGE ready ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{ printf "%d MB", $1 / 1e6 }'))"
