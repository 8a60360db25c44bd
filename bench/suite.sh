#!/usr/bin/env bash
# The test suite as CI runs it, timed: clone the repository's committed HEAD into a new
# directory, run .ci/run there, and print wall time, the machine's CPU time over the run
# (from /proc/stat: every process, dockerd and the containers included), the result line and
# the 30 slowest tests. bench/RESULTS.md ("Test suite") records its runs.
#
# Usage: bench/suite.sh [CLONE_DIR]   (default: a new directory under ${TMPDIR:-/tmp})
#   TBFLOW_TEST_WORKERS is passed through to scripts/test.sh (default 4 workers).
# Exit status: that of .ci/run.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
clone="${1:-$(mktemp -d "${TMPDIR:-/tmp}/tbflow-suite.XXXXXX")}"
log="$clone.log"

cpu_ticks() {  # user+nice+system+irq+softirq+steal of all CPUs, in clock ticks
  awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat
}

git clone -q "$REPO" "$clone"
start_s="$(date +%s)"
start_cpu="$(cpu_ticks)"
rc=0
(cd "$clone" && bash .ci/run) >"$log" 2>&1 </dev/null || rc=$?
wall=$(( $(date +%s) - start_s ))
cpu=$(( ($(cpu_ticks) - start_cpu) / $(getconf CLK_TCK) ))

echo "suite: $(git -C "$clone" rev-parse --short HEAD) rc=$rc wall=${wall}s cpu=${cpu}s (machine, all processes) log=$log"
grep -E '^(=+ )?[0-9]+ (passed|failed)|^FAILED|^ERROR' "$log" | tail -15 || true
sed -n '/slowest 30 durations/,/^$/p' "$log" | head -33
exit "$rc"
