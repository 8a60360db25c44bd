#!/usr/bin/env bash
# The test command (locally and in CI): bootstrap with scripts/setup.sh, then
# run pytest from the repo root in the project venv with a throwaway, CI-friendly
# Prefect configuration.
#
# Usage: scripts/test.sh [pytest args...]
#   Paths in the arguments are resolved from the repo root (we cd there);
#   absolute paths work from anywhere.
#   Tests run in TBFLOW_TEST_WORKERS pytest-xdist workers (default 4; 0 runs them in this
#   process), tests of one xdist_group on one worker; each test has a timeout (pyproject.toml,
#   pytest-timeout) and the 30 slowest are listed at the end.
# Exit status: pytest's, except that "no tests collected" (pytest exit 5) is
# reported loudly as a failure so CI never goes green with zero tests.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

"$REPO/scripts/setup.sh"

cd "$REPO"

# Prefect: private, throwaway home + ephemeral API server, no telemetry.
own_prefect_home=""
if [ -z "${PREFECT_HOME:-}" ]; then
  own_prefect_home="$(mktemp -d "${TMPDIR:-/tmp}/tbflow-prefect-home.XXXXXX")"
  export PREFECT_HOME="$own_prefect_home"
fi
# shellcheck disable=SC2317,SC2329  # invoked by the EXIT trap
cleanup() {
  if [ -n "$own_prefect_home" ]; then rm -rf "$own_prefect_home"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

unset PREFECT_API_URL
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=90
export PREFECT_SERVER_ANALYTICS_ENABLED=false
export PREFECT_LOGGING_TO_API_ENABLED=false
export DO_NOT_TRACK=1
export VIRTUAL_ENV="$REPO/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"

rc=0
workers="${TBFLOW_TEST_WORKERS:-4}"
# --no-loadscope-reorder: work is handed out in collection order, longest first (tests/xdist_schedule.py)
"$VIRTUAL_ENV/bin/python" -m pytest -n "$workers" --dist loadgroup --no-loadscope-reorder --durations=30 "$@" || rc=$?

if [ "$rc" -eq 5 ]; then
  echo "tbflow test: FAILED: no tests collected (pytest exit 5) - refusing to pass with zero tests" >&2
fi
exit "$rc"
