#!/bin/bash
# A tiny agent for a declarative harness file (examples/declared-harness/tiny-agent.toml): it asks
# the model one question through tbflow's gateway, with nothing but bash (/dev/tcp, no curl in the
# image), prints the model's JSON reply as its event log, then does the task itself and exits 3,
# its "incomplete" exit (it never checks its work), which tbflow records and still scores.
set -u
hostport=${TINY_URL#http://}
host=${hostport%%:*}
port=${hostport##*:}
body='{"model": "'"$TINY_MODEL"'", "messages": [{"role": "user", "content": "Say done."}]}'
exec 3<>"/dev/tcp/$host/$port"
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$hostport" "$TINY_KEY" "${#body}" "$body" >&3
response=$(cat <&3)
status=${response%%$'\r'*}
case $status in
    *" 200 "*) ;;
    *) echo "ERROR: the model answered $status: ${response##*$'\r\n\r\n'}" >&2; exit 1 ;;
esac
printf '%s\n' "${response##*$'\r\n\r\n'}"
echo solved > /app/done.txt
exit 3
