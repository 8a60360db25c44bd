#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from collections import defaultdict
totals = defaultdict(int)
with open("/app/sales.csv") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += int(row["amount"])
with open("/app/totals.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["region", "total"])
    for region in sorted(totals):
        w.writerow([region, totals[region]])
PY
