#!/bin/bash
# Restarts the `chatsuite dev` stack that bench/gateway-ab.sh measures (data in /tmp/lg-dev, gateway
# on :8180), from this checkout's release build, with the benchmarks' limits lifted and any extra
# environment given as arguments, and waits until it is ready (docs/benchmarks.md, part 11):
#   bench/restack.sh DATABASE_MAX_CONNECTIONS=20
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(pgrep -f "chatsuite dev --data-dir /tmp/lg-dev" || true)
if [ -n "$old" ]; then
  kill $old
  while pgrep -f "chatsuite dev --data-dir /tmp/lg-dev" > /dev/null; do sleep 1; done
fi
env "$@" GATEWAY_USER_RATE_PER_SECOND=1000000 GATEWAY_USER_BURST=1000000 GATEWAY_ADDRESS_RATE_PER_SECOND=1000000 \
  GATEWAY_ADDRESS_BURST=1000000 AUTH_ACCESS_TTL_SECONDS=86400 GATEWAY_REALTIME_HANDSHAKE_BURST=100000 \
  GATEWAY_REALTIME_JOIN_BURST=1000000 \
  setsid nohup .build/release/chatsuite dev --data-dir /tmp/lg-dev --postgres-port 54349 --port 8180 --log-level warning \
  > "${DEV_LOG:-/tmp/dev-ab.log}" 2>&1 &
for _ in $(seq 1 90); do
  sleep 1
  grep -q "is ready" "${DEV_LOG:-/tmp/dev-ab.log}" && exit 0
done
echo "the stack did not become ready; see ${DEV_LOG:-/tmp/dev-ab.log}" >&2
exit 1
