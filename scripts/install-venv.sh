#!/usr/bin/env bash
# Install tbflow and exactly the versions of requirements.lock into a venv (created when missing).
# Called by scripts/setup.sh; tests/test_fresh_install.py calls it on a brand-new venv.
#
#   scripts/install-venv.sh VENV
#
# Why this way: the result must depend only on the lock, never on what an index publishes later.
# A plain `pip install -r requirements.lock --require-hashes` still *resolves* (an old pip, such as
# the 23.2.1 that Python 3.11.7 bundles, resolved prefect's `httpx[http2]` against the index and
# refused the new httpx 0.29.0 it found there), and `pip install -e .` fetched the newest setuptools
# into an isolated build environment. So:
#   1. the locked pip, then pip install --no-deps --require-hashes -r requirements.lock: every
#      package, pip and setuptools included, exactly as pinned and hash-checked; nothing is
#      resolved, so no new release, no extra and no bundled pip version can change the set;
#   2. tbflow itself editable with --no-deps --no-build-isolation --no-index, built by the locked
#      setuptools already in the venv: nothing fetched;
#   3. pip check: the lock is complete and consistent (a dependency missing from it fails here,
#      with its name, instead of being fetched behind our back).
# The lock is made by uv (its header has the command); uv is needed only to regenerate it.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
VENV="${1:?usage: scripts/install-venv.sh VENV}"
MIN_PYTHON="3.11.4"   # tarfile.data_filter (tasks_lib/container/log_download.py); pyproject.toml's requires-python

say() { printf 'tbflow setup: %s\n' "$*" >&2; }
die() { printf 'tbflow setup: ERROR: %s\n' "$*" >&2; exit 1; }

# python_ok PYTHON: exit 0 when PYTHON is at least MIN_PYTHON
python_ok() {
  "$1" -c 'import sys; want = tuple(int(p) for p in sys.argv[1].split(".")); sys.exit(sys.version_info[:3] < want)' \
    "$MIN_PYTHON" 2>/dev/null
}

if [ -x "$VENV/bin/python" ] && ! python_ok "$VENV/bin/python"; then
  say "$VENV has $("$VENV/bin/python" -V 2>&1), older than $MIN_PYTHON; recreating it"
  rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
  command -v python3 >/dev/null 2>&1 || die "python3 not found on PATH; tbflow needs Python >= $MIN_PYTHON"
  python_ok python3 || die "python3 on PATH is $(python3 -V 2>&1); tbflow needs Python >= $MIN_PYTHON"
  say "creating venv $VENV with $(python3 -V 2>&1)"
  python3 -m venv "$VENV"
fi

pip() {
  # (the local pip mirror config makes pip warn about every absent index dir: drop that noise)
  local rc
  set +e
  PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip "$@" </dev/null 2>&1 \
    | { grep -v -e 'is ignored: it is neither a file nor a directory' >&2 || true; }
  rc=${PIPESTATUS[0]}
  set -e
  return "$rc"
}

# pip first, as locked: the rest then installs with the same pip whatever Python created the venv
# (and a current pip is faster at it than the 23.2.1 that Python 3.11.7 bundles)
pip_lock="$(mktemp)"
trap 'rm -f "$pip_lock"' EXIT
awk '/^pip==/ {p = 1; print; next} p && /^ +--hash=/ {print; next} {p = 0}' "$REPO/requirements.lock" >"$pip_lock"
grep -q '^pip==' "$pip_lock" || die "requirements.lock pins no pip (regenerate it with the command in its header)"
pip install -q --no-deps --require-hashes -r "$pip_lock" || die "pip install of the locked pip failed (exit $?)"
say "pip install --no-deps --require-hashes -r requirements.lock (exactly the lock, nothing resolved)"
pip install -q --no-deps --require-hashes -r "$REPO/requirements.lock" \
  || die "pip install from requirements.lock failed (exit $?)"
say "pip install --no-deps --no-build-isolation -e . (tbflow itself, with the locked setuptools)"
(cd "$REPO" && pip install -q --no-deps --no-build-isolation --no-index -e .) \
  || die "pip install -e . failed (exit $?)"
pip check || die "pip check: requirements.lock is incomplete or inconsistent (its output above)"
