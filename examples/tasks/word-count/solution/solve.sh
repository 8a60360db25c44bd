#!/bin/bash
set -euo pipefail
cat > /app/wc.sh <<'SH'
#!/bin/sh
wc -w < "$1" | tr -d ' '
SH
chmod +x /app/wc.sh
