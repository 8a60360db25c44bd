#!/usr/bin/env bash
# Static checks, fast and before any Docker test: ruff (lint) and mypy (types), both configured in
# pyproject.toml. Sets up the venv first (scripts/setup.sh) when it is missing.
# Usage: scripts/check.sh        Exit status: non-zero when either check finds a problem.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
[ -x "$REPO/.venv/bin/ruff" ] && [ -x "$REPO/.venv/bin/mypy" ] || "$REPO/scripts/setup.sh"
cd "$REPO"
rc=0
echo "tbflow check: ruff" >&2
.venv/bin/ruff check . || rc=1
echo "tbflow check: mypy" >&2
.venv/bin/mypy || rc=1
exit "$rc"
