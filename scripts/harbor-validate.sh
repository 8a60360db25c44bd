#!/usr/bin/env bash
# Check ATIF trajectory files against Harbor's own Trajectory model (harbor 0.26.0, the format's
# reference), in the venv of scripts/harbor-venv.sh (Python 3.12, made once, pinned).
# Usage: scripts/harbor-validate.sh FILE...
# Exit: 0 every file loads; 1 a file does not (its error is printed); 2 usage;
#       3 no Python 3.12 on this machine (python3.12 on PATH or under pyenv); 4 Harbor's install failed.
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 TRAJECTORY.json..." >&2
  exit 2
fi

venv="$("$(dirname "${BASH_SOURCE[0]}")/harbor-venv.sh")"  # exits 3 (no Python 3.12) or 4 with its reason

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
