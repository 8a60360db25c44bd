#!/usr/bin/env bash
# BuildKit for tbflow's image builds (docs/running-jobs.md, build-image): the docker-buildx CLI plugin, and
# (with --engine) a Docker engine new enough for Dockerfile heredocs (23+). Debian bookworm has
# neither (docker.io 20.10, no docker-buildx), so this installs trixie's packages, pinned by
# version and sha256; their dependencies (libc6 >= 2.34, containerd >= 1.4, runc, tini, iptables)
# resolve on bookworm, which `apt-get install ./x.deb` does.
#
# Called by scripts/setup.sh as root; idempotent (nothing to do: a no-op). It never stops an
# engine: when the running dockerd is the old one it says so and leaves the upgrade to a run with
# no engine up (a fresh CI machine), since stopping it would kill every container on it.
#
# Usage: scripts/install-buildkit.sh [--engine]
# Environment: TBFLOW_DEBIAN_MIRROR (default http://deb.debian.org/debian)
set -euo pipefail

MIRROR="${TBFLOW_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
MIN_ENGINE_MAJOR=23
# package version sha256 (amd64, from trixie's Packages index)
BUILDX_DEB="docker-buildx 0.13.1+ds1-3 fcf8c48204d1603c8f209451d7827eb91bf30759578baf7704e9e1a87e5f1d7f"
ENGINE_DEB="docker.io 26.1.5+dfsg1-9+deb13u1+b1 53ae1a99f15113f0a0d2226808ec0d24ee31b3b87b87ab8ec35be09a1a2ee13b"
CLI_DEB="docker-cli 26.1.5+dfsg1-9+deb13u1+b1 596647bc4ffaaaf2e2321116b8a10f6a6086ada797c17a7117798cb391a72776"

export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

say() { printf 'tbflow setup: %s\n' "$*" >&2; }
die() { printf 'tbflow setup: ERROR: %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

engine_major() { # the installed dockerd's major version, 0 when there is none
  local v
  v="$(dockerd --version 2>/dev/null | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p')"
  printf '%s\n' "${v:-0}"
}

engine_running() {
  if have pgrep; then pgrep -x dockerd >/dev/null 2>&1; return; fi
  grep -qx dockerd /proc/[0-9]*/comm 2>/dev/null
}

pool_path() { # package version -> its path in the pool (source docker.io builds docker-cli)
  local source="$1"
  [ "$1" = docker-cli ] && source=docker.io
  printf 'pool/main/%s/%s/%s_%s_amd64.deb\n' "${source:0:1}" "$source" "$1" "$2"
}

want_engine=0
[ "${1:-}" = --engine ] && want_engine=1

debs=()
docker buildx version >/dev/null 2>&1 || debs+=("$BUILDX_DEB")
if [ "$want_engine" -eq 1 ] && [ "$(engine_major)" -lt "$MIN_ENGINE_MAJOR" ]; then
  if engine_running; then
    say "WARNING: the running dockerd is $(dockerd --version 2>/dev/null || echo 'unknown') (< $MIN_ENGINE_MAJOR):" \
        "Dockerfile heredocs fail to build; stop it and rerun setup to upgrade it (not done: it would kill its containers)"
  else
    debs+=("$ENGINE_DEB" "$CLI_DEB")
  fi
fi
if [ "${#debs[@]}" -eq 0 ]; then
  say "BuildKit present (docker buildx; engine $(engine_major).x)"
  exit 0
fi
[ "$(dpkg --print-architecture)" = amd64 ] || { say "WARNING: no pinned BuildKit packages for $(dpkg --print-architecture); skipped"; exit 0; }
[ "$(id -u)" -eq 0 ] || die "need root to install BuildKit (docker-buildx, docker.io from trixie)"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/tbflow-buildkit.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
apt-get update -qq </dev/null >&2
have curl || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl </dev/null >&2
files=()
for deb in "${debs[@]}"; do
  read -r name version sha <<<"$deb"
  path="$(pool_path "$name" "$version")"
  file="$tmp/${path##*/}"
  say "downloading $name $version ($MIRROR/$path)"
  curl -fsSL --retry 3 -o "$file" "$MIRROR/$path" || die "cannot download $MIRROR/$path"
  printf '%s  %s\n' "$sha" "$file" | sha256sum -c --quiet - >&2 || die "$file: sha256 is not the pinned $sha"
  files+=("$file")
done
say "installing ${debs[*]%% *}"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${files[@]}" </dev/null >&2
docker buildx version >/dev/null 2>&1 || die "docker buildx does not run after installing docker-buildx"
say "BuildKit installed (docker buildx; engine $(engine_major).x)"
