#!/usr/bin/env bash
# Bootstrap everything tbflow needs on this machine. Idempotent; every step is
# skipped when already satisfied, so a no-op run takes well under 3 s.
# Runs as root with no stdin (CI), from any cwd.
#
#   1. docker.io (dockerd) and debootstrap installed (and gcc, npm, shellcheck, chromium for the tests)
#      plus BuildKit (scripts/install-buildkit.sh: docker-buildx, and an engine >= 23 from trixie
#      when no older engine is running)
#   2. a Docker engine answering (starts a detached dockerd if none)
#   3. $REPO/.venv: exactly requirements.lock (scripts/install-venv.sh: hash-checked, nothing
#      resolved), then tbflow itself editable (redone when pyproject.toml, the lock or it changes)
#   4. base image tbflow/base:bookworm (scripts/make-base-image.sh)
#
# Environment: DOCKER_HOST (if set: only check that engine answers),
#              TBFLOW_BASE_IMAGE (default tbflow/base:bookworm),
#              TBFLOW_DOCKER_WAIT (seconds to wait for dockerd, default 60).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
VENV="$REPO/.venv"
STAMP="$VENV/.tbflow-pyproject.sha256"
IMAGE="${TBFLOW_BASE_IMAGE:-tbflow/base:bookworm}"
DOCKERD_LOG=/var/log/tbflow-dockerd.log
DOCKER_WAIT="${TBFLOW_DOCKER_WAIT:-60}"   # seconds to wait for the engine

export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

say() { printf 'tbflow setup: %s\n' "$*" >&2; }
die() { printf 'tbflow setup: ERROR: %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# Serialise concurrent setups (shared venv, one dockerd); uncontended = instant.
lock="${TMPDIR:-/tmp}/tbflow-setup.$(printf '%s' "$REPO" | sha256sum | cut -c1-12).lock"
exec 9>"$lock"
if ! flock -n 9; then
  say "waiting for another setup run ($lock)"
  flock -w 1800 9 || die "timed out waiting for $lock"
fi

# --- 1. packages -------------------------------------------------------------
pkgs=()
if [ -n "${DOCKER_HOST:-}" ]; then
  have docker || pkgs+=(docker.io)          # client only; engine is remote
else
  have dockerd || pkgs+=(docker.io)
fi
have debootstrap || pkgs+=(debootstrap)
have gcc || pkgs+=(gcc libc6-dev)        # builds the static in-container judge and model relay
have patchelf || pkgs+=(patchelf)       # points the supplied runner's python3.13 at its own loader (supplied_runner/harden.py)
[ -x /bin/bash-static ] || pkgs+=(bash-static)  # the bash tbflow runs tests/test.sh with (docs/judge.md)
have npm || pkgs+=(npm)                  # fetches the pinned agent CLIs (model harnesses)
have shellcheck || pkgs+=(shellcheck)    # scripts/check.sh and the test that every .sh file passes it
have chromium || pkgs+=(chromium)        # the tests open report.html in headless Chromium (docs/reports.md)
if [ "${#pkgs[@]}" -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "need root to install ${pkgs[*]}"
  say "installing ${pkgs[*]}"
  apt-get update -qq </dev/null >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" </dev/null >&2
else
  say "packages present (docker, debootstrap, gcc, npm, bash-static, shellcheck, chromium)"
fi

# BuildKit: the buildx plugin always; the engine only when it is local (DOCKER_HOST unset)
if [ -n "${DOCKER_HOST:-}" ]; then
  "$REPO/scripts/install-buildkit.sh"
else
  "$REPO/scripts/install-buildkit.sh" --engine
fi

# --- 2. docker engine ----------------------------------------------------------
engine_up() { timeout 20 docker info >/dev/null 2>&1; }

dockerd_running() {
  if have pgrep; then pgrep -x dockerd >/dev/null 2>&1; return; fi
  grep -qx dockerd /proc/[0-9]*/comm 2>/dev/null
}

wait_engine() { # $1 = pid of a dockerd we started, or empty
  local pid="${1:-}" deadline=$((SECONDS + DOCKER_WAIT))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if [ -S /var/run/docker.sock ] && engine_up; then return 0; fi
    # ($! may be a setsid that forked and exited, so also look for any dockerd)
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && ! dockerd_running; then
      say "dockerd (pid $pid) exited during startup"; return 1
    fi
    sleep 1
  done
  return 1
}

if engine_up; then
  say "docker engine running${DOCKER_HOST:+ at $DOCKER_HOST}"
elif [ -n "${DOCKER_HOST:-}" ]; then
  die "DOCKER_HOST=$DOCKER_HOST does not answer (docker info failed)"
elif dockerd_running; then
  # Someone else's dockerd is still starting (or stuck): never start a second
  # one, never kill it; just wait.
  say "dockerd process found but not answering yet; waiting up to ${DOCKER_WAIT}s"
  wait_engine "" || die "existing dockerd does not answer after ${DOCKER_WAIT}s (docker info fails)"
  say "docker engine running"
else
  [ "$(id -u)" -eq 0 ] || die "no docker engine and not root: cannot start dockerd"
  say "starting dockerd (log: $DOCKERD_LOG)"
  # setsid + nohup: own session, survives this script and CI step teardown. 9>&-: the daemon
  # must not inherit the setup lock, or every later setup (./tbflow run) waits on it forever.
  setsid nohup dockerd >"$DOCKERD_LOG" 2>&1 </dev/null 9>&- &
  dpid=$!
  if ! wait_engine "$dpid"; then
    say "dockerd did not come up; last lines of $DOCKERD_LOG:"
    tail -n 25 "$DOCKERD_LOG" >&2 || true
    exit 1
  fi
  say "docker engine running (started dockerd pid $dpid)"
fi

# --- 3. python venv ------------------------------------------------------------
# scripts/install-venv.sh installs exactly requirements.lock (it says why it is done that way) and
# refuses a Python older than tbflow needs, in one line.
want="$(cat "$REPO/pyproject.toml" "$REPO/requirements.lock" "$REPO/scripts/install-venv.sh" | sha256sum | cut -d' ' -f1)"
have_stamp="$(cat "$STAMP" 2>/dev/null || true)"
if [ -e "$VENV" ] && ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
  say "venv $VENV is broken; recreating"
  rm -rf "$VENV"
fi
if [ ! -e "$VENV" ] || [ "$want" != "$have_stamp" ]; then
  if [ ! -e "$VENV" ]; then why="new venv"; elif [ -n "$have_stamp" ]; then why="pyproject.toml, lock or installer changed"; else why="no install stamp"; fi
  say "installing requirements.lock into $VENV ($why)"
  rm -f "$STAMP"
  "$REPO/scripts/install-venv.sh" "$VENV"
  printf '%s\n' "$want" >"$STAMP"
  say "venv ready"
else
  say "venv up to date"
fi

# --- 4. base image -------------------------------------------------------------
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  say "base image $IMAGE present"
else
  say "building base image $IMAGE (about a minute)"
  TBFLOW_BASE_IMAGE="$IMAGE" "$REPO/scripts/make-base-image.sh" --if-missing
  say "base image $IMAGE built"
fi
