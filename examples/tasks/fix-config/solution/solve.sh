#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import json
p = "/app/settings.json"
cfg = json.load(open(p))
cfg.update(port=9090, debug=False)
json.dump(cfg, open(p, "w"))
PY
