#!/usr/bin/env bash
# What an agent's `yes > /proc/1/fd/1` leaves on the host's disk in SECONDS seconds, for a container
# started with Docker's default log driver (json-file, what trial containers had before) and with
# the driver tbflow now sets (none: tasks_lib/container/trial_limits.py). Usage:
#   bench/container_log_flood.sh [SECONDS]
# Prints one line per driver: driver, host log bytes after the flood.
set -euo pipefail
SECONDS_FLOOD=${1:-10}
IMAGE=${TBFLOW_BENCH_IMAGE:-tbflow/base:bookworm}
LABEL="tbflow.bench=container-log-flood-$$"
ids=()
cleanup() { if ((${#ids[@]})); then docker rm -f "${ids[@]}" >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT
for driver in json-file none; do
  id=$(docker run -d --init --network none --label "$LABEL" --log-driver "$driver" "$IMAGE" sleep infinity)
  ids+=("$id")
  docker exec "$id" sh -c "timeout $SECONDS_FLOOD sh -c 'yes > /proc/1/fd/1'; true"
  log=$(docker inspect -f '{{.LogPath}}' "$id")
  bytes=0
  if [[ -n "$log" && -f "$log" ]]; then bytes=$(stat -c %s "$log"); fi
  echo "$driver $bytes"
  docker rm -f "$id" >/dev/null
done
