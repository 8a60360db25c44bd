#!/usr/bin/env bash
# Static checks, fast and before any Docker test: ruff (lint), mypy (types) and lint-imports (the
# import layers, import-linter), all configured in pyproject.toml, the size limits
# (scripts/check_sizes.py) and shellcheck on every committed .sh file. Sets up the venv and packages first
# (scripts/setup.sh) when they are missing.
# Usage: scripts/check.sh        Exit status: non-zero when either check finds a problem.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
if ! { [ -x "$REPO/.venv/bin/ruff" ] && [ -x "$REPO/.venv/bin/mypy" ] && [ -x "$REPO/.venv/bin/lint-imports" ] && command -v shellcheck >/dev/null; }; then
  "$REPO/scripts/setup.sh"
fi
cd "$REPO"
rc=0
echo "tbflow check: ruff" >&2
.venv/bin/ruff check . || rc=1
echo "tbflow check: mypy" >&2
.venv/bin/mypy || rc=1
echo "tbflow check: lint-imports" >&2
.venv/bin/lint-imports --no-cache --no-logo || rc=1
echo "tbflow check: sizes (no module over 400 lines, no function over 60)" >&2
.venv/bin/python scripts/check_sizes.py || rc=1
echo "tbflow check: shellcheck" >&2
git ls-files -z '*.sh' | xargs -0 shellcheck || rc=1
exit "$rc"
