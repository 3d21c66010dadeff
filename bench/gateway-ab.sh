#!/bin/bash
# One run of an A/B between gateway builds on a running `chatsuite dev` stack (docs/benchmarks.md,
# part 6): copies BINARY over .build/release/gateway (or SERVICE's), kills the stack's process of it
# (the launcher restarts it from the new binary), waits for it, then runs `chatsuite loadgen` with Kafka
# injection or REST against it, watching chat-fanout, push, chat, PostgreSQL and the embedded
# broker. Alternate builds between runs; the stack (and its growing broker logs) is shared.
#
# Start the stack first, from this checkout's release build, with the limits lifted:
#   GATEWAY_USER_RATE_PER_SECOND=1000000 GATEWAY_USER_BURST=1000000 GATEWAY_ADDRESS_RATE_PER_SECOND=1000000 \
#   GATEWAY_ADDRESS_BURST=1000000 AUTH_ACCESS_TTL_SECONDS=86400 GATEWAY_REALTIME_HANDSHAKE_BURST=100000 \
#   GATEWAY_REALTIME_JOIN_BURST=1000000 \
#     .build/release/chatsuite dev --data-dir /tmp/lg-dev --postgres-port 54349 --port 8180 --log-level warning > /tmp/dev-ab.log 2>&1 &
#
#   bench/gateway-ab.sh LABEL BINARY [loadgen options, e.g. --sockets 5000 --channels 500 --inject kafka --seconds 30 --peer nchan]
#   env: WORLD (default /tmp/lg-world-5000.json; one per plan), DEV_LOG (default /tmp/dev-ab.log),
#        SERVICE (default gateway: the executable BINARY replaces),
#        LOADGEN (default .build/release/chatsuite: the binary whose `loadgen` drives the run)
#   output: /tmp/ab-LABEL.log (the report)
set -euo pipefail
label=$1 bin=$2
shift 2
cd "$(dirname "$0")/.."
dev_log=${DEV_LOG:-/tmp/dev-ab.log}
service=${SERVICE:-gateway}
. bench/swap.sh
swap_service "$service" "$bin"
sleep 10
gateway=$(pid gateway)
launcher=$(pgrep -f "chatsuite dev --data-dir /tmp/lg-dev" | head -1)
brokers=$(grep -o "embedded Kafka: [0-9.:]*" "$dev_log" | awk '{print $3}')
postmaster=$(head -1 "$(find /tmp/lg-dev -name postmaster.pid | head -1)")
echo "$label: $service $(pid "$service") (binary $bin), gateway $gateway"
"${LOADGEN:-.build/release/chatsuite}" loadgen --gateway http://127.0.0.1:8180 --members 10 --rate 1000 --brokers "$brokers" \
  --gateway-pid "$gateway" --watch chat-fanout="$(pid chat-fanout)" --watch push="$(pid push)" --watch chat="$(pid chat)" \
  --watch postgres="$postmaster" --watch-alone broker="$launcher" --world "${WORLD:-/tmp/lg-world-5000.json}" \
  --setup-concurrency 6 "$@" > "/tmp/ab-$label.log" 2>&1
grep -E "^(sockets|sent|deliveries|latency|CPU)|RSS per idle socket" "/tmp/ab-$label.log"
