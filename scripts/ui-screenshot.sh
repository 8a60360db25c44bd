#!/usr/bin/env bash
# Take a screenshot of a Prefect UI page with headless Chromium (docs/img/, docs/deployments.md).
#
#   scripts/ui-screenshot.sh URL OUT.png [WIDTH,HEIGHT]
#
# Why a script: the screenshots in docs/ are made the same way each time (a fresh profile, no
# network calls of Chromium's own, time for the UI's JavaScript to load its data). Debian's
# chromium package is installed only when missing. The server must have been started with
# PREFECT_UI_API_URL pointing at its own API (else the UI asks 127.0.0.1:4200).
set -euo pipefail

if [ "$#" -lt 2 ]; then
    echo "usage: $0 URL OUT.png [WIDTH,HEIGHT]" >&2
    exit 2
fi
url=$1
out=$2
size=${3:-1400,900}

if ! command -v chromium >/dev/null 2>&1; then
    echo "ui-screenshot: installing Debian's chromium" >&2
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
    --window-size="$size" --virtual-time-budget=25000 --screenshot="$out" "$url" >/dev/null 2>&1
test -s "$out"
echo "ui-screenshot: $out" >&2
