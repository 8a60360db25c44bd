#!/usr/bin/env bash
# Alert a webhook (Slack, a chat bot, a pager) whenever a tbflow job run ends with trials that were
# not all scored: saves a Prefect Webhook block for URL (named NAME, default tbflow-alerts; the URL
# is kept as a secret) and creates the automation deployments/alert-not-all-scored.yaml with that
# block's id. Run it where PREFECT_API_URL names your server, with the venv's prefect on PATH:
#   deployments/alert-webhook.sh URL [NAME]
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 URL [BLOCK_NAME]" >&2
    exit 2
fi
url=$1
name=${2:-tbflow-alerts}
here=$(cd "$(dirname "$0")" && pwd)
python=$(dirname "$(command -v prefect)")/python
block_id=$("$python" - "$url" "$name" <<'PY'
import sys

from prefect.blocks.webhook import Webhook

url, name = sys.argv[1], sys.argv[2]
print(Webhook(method="POST", url=url, headers={"Content-Type": "application/json"}).save(name, overwrite=True))
PY
)
recipe=$(mktemp --suffix=.yaml)
trap 'rm -f "$recipe"' EXIT
sed "s/WEBHOOK_BLOCK_ID/$block_id/" "$here/alert-not-all-scored.yaml" > "$recipe"
prefect automation create --from-file "$recipe"
echo "tbflow: webhook block $name ($block_id) and automation tbflow-not-all-scored created"
