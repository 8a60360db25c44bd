#!/usr/bin/env bash
# Wall time of installing the lock into a brand-new venv (issue 26), side by side in one run:
#   floor:  python3 -m venv, then the lock's pip, then `pip install --require-hashes -r requirements.lock`
#           (resolving, as setup did before issue 26 with an up-to-date pip) and `pip install --no-deps -e .`
#   tbflow: scripts/install-venv.sh (the locked pip, then --no-deps: nothing resolved, then pip check)
# each with an empty pip cache (a fresh machine) and with the cache the first pass filled.
#
#   bench/fresh_setup.sh        prints one line per measurement
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tbflow-bench-setup.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME="$work/cache" PIP_DISABLE_PIP_VERSION_CHECK=1
pip_version="$(awk -F'[= ]+' '/^pip==/ {print $2}' "$REPO/requirements.lock")"

floor() {
  python3 -m venv "$1"
  "$1/bin/pip" install -q "pip==$pip_version"
  "$1/bin/pip" install -q --require-hashes -r "$REPO/requirements.lock"
  (cd "$REPO" && "$1/bin/pip" install -q --no-deps -e .)
}

timed() { # label, command...: a failed install is no measurement, so it stops the run with its output
  local label="$1" t0 t1; shift
  t0="$(date +%s.%N)"
  if ! "$@" >"$work/out.log" 2>&1; then
    printf '%s FAILED; its last lines:\n' "$label" >&2
    tail -n 20 "$work/out.log" >&2
    exit 1
  fi
  t1="$(date +%s.%N)"
  printf '%-28s %6.1f s\n' "$label" "$(echo "$t1 - $t0" | bc)"
}

for cache in empty warm; do
  [ "$cache" = empty ] && rm -rf "$XDG_CACHE_HOME"
  timed "floor ($cache cache)" floor "$work/floor-$cache"
  [ "$cache" = empty ] && rm -rf "$XDG_CACHE_HOME"
  timed "install-venv.sh ($cache cache)" "$REPO/scripts/install-venv.sh" "$work/tbflow-$cache"
done
