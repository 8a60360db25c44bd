#!/usr/bin/env bash
# Make (once) and print the path of a venv holding Harbor's own package, to check tbflow's
# trajectories and exports with what Harbor itself reads (scripts/harbor-validate.sh,
# scripts/harbor-check.sh). Harbor 0.26 needs Python >= 3.12 (tbflow's venv is 3.11) and a large
# dependency tree, so it gets a venv of its own under the cache dir ($TBFLOW_CACHE_DIR, else
# $XDG_CACHE_HOME/tbflow, else ~/.cache/tbflow), installed from PyPI with every dependency pinned
# by scripts/harbor-constraints.txt: a release on the index cannot change what the check runs.
# --no-compile: pip would byte-compile all 470 MB of it (botocore, litellm...) for a check that
# imports a small part; Python compiles what is imported on first use (40 % of the install's CPU).
# Python 3.12: $TBFLOW_PYTHON312, else python3.12 on PATH, else pyenv's (a broken shim is skipped).
# Exit status: 0 (the venv's path on stdout); 3 no Python 3.12 here; 4 the install failed (its log named).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
HARBOR_VERSION=0.26.0
constraints="$REPO/scripts/harbor-constraints.txt"
cache="${TBFLOW_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tbflow}"
stamp="$(sha256sum "$constraints" | cut -c1-12)"
venv="$cache/harbor-$HARBOR_VERSION-$stamp-venv"

find_python() {
  local p
  for p in "${TBFLOW_PYTHON312:-}" "$(command -v python3.12 2>/dev/null || true)" \
           "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    if [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
      printf '%s\n' "$p"; return 0
    fi
  done
  return 1
}

if [ ! -f "$venv/.installed" ]; then
  py="$(find_python)" || { echo "harbor-venv: no Python 3.12 found (set TBFLOW_PYTHON312); Harbor needs >= 3.12" >&2; exit 3; }
  mkdir -p "$cache"
  exec 9>"$venv.lock"
  flock -w 900 9
  if [ ! -f "$venv/.installed" ]; then
    echo "harbor-venv: installing harbor==$HARBOR_VERSION into $venv (once)" >&2
    rm -rf "$venv"
    if ! { "$py" -m venv "$venv" && "$venv/bin/pip" install -q --no-compile --disable-pip-version-check \
             -c "$constraints" "harbor==$HARBOR_VERSION"; } >"$venv.log" 2>&1; then
      echo "harbor-venv: installing harbor==$HARBOR_VERSION failed; see $venv.log" >&2
      exit 4
    fi
    touch "$venv/.installed"
  fi
fi
printf '%s\n' "$venv"
