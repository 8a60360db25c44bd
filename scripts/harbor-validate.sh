#!/usr/bin/env bash
# Check ATIF trajectory files against Harbor's own Trajectory model (harbor 0.26.0, the format's
# reference). Harbor needs Python >= 3.12 and brings a large dependency tree, so it lives in a
# venv of its own, built once (atomically) under tbflow's cache dir:
#   ${TBFLOW_CACHE_DIR:-${XDG_CACHE_HOME:+$XDG_CACHE_HOME/tbflow}} (else ~/.cache/tbflow)/harbor-atif-0.26.0-venv
# Usage: scripts/harbor-validate.sh FILE...
# Exit: 0 every file loads; 1 a file does not (its error is printed); 2 usage;
#       3 no Python 3.12 on this machine (python3.12 on PATH or under pyenv) or the install failed.
set -euo pipefail

HARBOR_VERSION="0.26.0"
if [ "$#" -eq 0 ]; then
  echo "usage: $0 TRAJECTORY.json..." >&2
  exit 2
fi

if [ -n "${TBFLOW_CACHE_DIR:-}" ]; then
  cache="$TBFLOW_CACHE_DIR"
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
  cache="$XDG_CACHE_HOME/tbflow"
else
  cache="$HOME/.cache/tbflow"
fi
venv="$cache/harbor-atif-$HARBOR_VERSION-venv"

find_python312() {
  local candidate
  for candidate in "$(command -v python3.12 || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import sys' >/dev/null 2>&1; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! "$venv/bin/python" -c 'import harbor.models.trajectories' >/dev/null 2>&1; then
  if ! python312="$(find_python312)"; then
    echo "harbor-validate: no Python 3.12 found (python3.12 on PATH or under pyenv); Harbor needs >= 3.12" >&2
    exit 3
  fi
  mkdir -p "$cache"
  tmp="$(mktemp -d "$cache/.harbor-atif-venv.XXXXXX")"
  if ! { "$python312" -m venv "$tmp" && "$tmp/bin/pip" install -q "harbor==$HARBOR_VERSION"; } >"$tmp.log" 2>&1; then
    echo "harbor-validate: installing harbor==$HARBOR_VERSION failed; see $tmp.log" >&2
    rm -rf "$tmp"
    exit 3
  fi
  rm -f "$tmp.log"
  rm -rf "$venv.old"
  if [ -e "$venv" ]; then mv "$venv" "$venv.old"; fi
  # another run may have finished first: theirs is as good as ours
  mv -T "$tmp" "$venv" 2>/dev/null || rm -rf "$tmp"
  rm -rf "$venv.old"
fi

exec "$venv/bin/python" - "$@" <<'PY'
import sys

from harbor.models.trajectories import Trajectory

bad = 0
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8") as fh:
            t = Trajectory.model_validate_json(fh.read())
    except Exception as exc:  # any failure to load is the file's
        print(f"{path}: not a valid ATIF trajectory for harbor: {exc}")
        bad = 1
    else:
        print(f"{path}: valid {t.schema_version}, {len(t.steps)} steps")
sys.exit(bad)
PY
