#!/usr/bin/env bash
# Check a `tbflow export --format harbor` directory with Harbor's own package (its pydantic models
# and its viewer's job scanner), so the export is judged by what Harbor reads, not by our mirror.
#
# Usage: scripts/harbor-check.sh DIR     (DIR = the --to of the export: job dirs and metadata.yaml)
# Prints one JSON document (per job: trials, rewards, exceptions, trajectories) on stdout.
# Harbor runs in the venv of scripts/harbor-venv.sh (Python 3.12, made once, pinned).
# Exit status: 0 Harbor read everything; 1 it refused a file (named); 3 no Python 3.12 here;
# 4 Harbor's install failed.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
[ "$#" -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }

venv="$("$REPO/scripts/harbor-venv.sh")"  # exits 3 (no Python 3.12) or 4 with its reason
exec "$venv/bin/python" "$REPO/scripts/harbor_check.py" "$1"
