#!/usr/bin/env bash
# Check a `tbflow export --format harbor` directory with Harbor's own package (its pydantic models
# and its viewer's job scanner), so the export is judged by what Harbor reads, not by our mirror.
#
# Usage: scripts/harbor-check.sh DIR     (DIR = the --to of the export: job dirs and metadata.yaml)
# Prints one JSON document (per job: trials, rewards, exceptions, trajectories) on stdout.
# Harbor 0.26 needs Python >= 3.12, tbflow's venv is 3.11: Harbor gets a venv of its own under the
# cache dir ($TBFLOW_CACHE_DIR, else $XDG_CACHE_HOME/tbflow, else ~/.cache/tbflow), installed
# once from PyPI. Python 3.12: $TBFLOW_PYTHON312, else python3.12 on PATH, else pyenv's.
# Exit status: 0 Harbor read everything; 1 it refused a file (named); 3 no Python 3.12 found.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
HARBOR_VERSION=0.26.0
[ "$#" -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }

cache="${TBFLOW_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tbflow}"
venv="$cache/harbor-$HARBOR_VERSION-venv"

find_python() {
  local p
  for p in "${TBFLOW_PYTHON312:-}" "$(command -v python3.12 2>/dev/null || true)" \
           "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.12*/bin/python3.12; do
    if [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
      printf '%s\n' "$p"; return 0
    fi
  done
  return 1
}

if [ ! -f "$venv/.installed" ]; then
  py="$(find_python)" || { echo "harbor-check: no Python 3.12 found (set TBFLOW_PYTHON312)" >&2; exit 3; }
  mkdir -p "$cache"
  exec 9>"$cache/harbor-$HARBOR_VERSION-venv.lock"
  flock -w 900 9
  if [ ! -f "$venv/.installed" ]; then
    echo "harbor-check: installing harbor==$HARBOR_VERSION into $venv (once)" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "harbor==$HARBOR_VERSION" >&2
    touch "$venv/.installed"
  fi
fi
exec "$venv/bin/python" "$REPO/scripts/harbor_check.py" "$1"
