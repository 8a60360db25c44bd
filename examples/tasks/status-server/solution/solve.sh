#!/bin/bash
set -euo pipefail
echo ok > /app/public/status.txt
cd /app/public
nohup python3 -m http.server 8000 --bind 127.0.0.1 > /tmp/http.log 2>&1 &
for _ in $(seq 50); do
  python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8000/status.txt")' 2>/dev/null && exit 0
  sleep 0.1
done
echo "server did not come up" >&2
exit 1
