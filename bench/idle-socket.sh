#!/bin/bash
# RSS per idle socket of one gateway binary (docs/benchmarks.md, "Part 4"): a fresh `chatsuite dev`
# stack from this checkout's release build, with GATEWAY in place of its gateway, rate limits
# lifted; `chatsuite loadgen` opens 5 000 sockets of PROTOCOL for 100 users (10 channels × 10
# members, so setup takes seconds), samples the gateway's RSS before and when idle, sends 30
# messages, and the stack stops. Alternate two binaries for an A/B.
#
#   bench/idle-socket.sh LABEL GATEWAY [socketio|native|stomp]
#   output: the report line; /tmp/idle-dev-LABEL.log (the stack), /tmp/idle-lg-LABEL.log (the report)
set -u
label=$1 gw=$2 proto=${3:-socketio}
# RATE and SEND_SECONDS change the send phase (default: 30 messages), for a CPU-per-delivery comparison.
# IDLE_SECONDS: how long the sockets stay idle before the sample (default 5; the native identify's
# aftermath — presence, checkpoints, chat's HTTP connections — settles within a minute).
# USERS and CHANNELS change the topology (default 100 users in 10 channels of 10 members; the
# issue-21 table's is USERS=5000 CHANNELS=500: one socket per user, presence among 5 000).
rate=${RATE:-10} send_seconds=${SEND_SECONDS:-3} idle_seconds=${IDLE_SECONDS:-5} users=${USERS:-100} channels=${CHANNELS:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=/tmp/idle-bin-$label
rm -rf "$bin"
mkdir "$bin"
for f in auth workspace chat chat-fanout presence payment push study; do ln -s "$root/.build/release/$f" "$bin/"; done
# Copies, not links: the launcher finds the services next to its own resolved path.
cp "$root/.build/release/chatsuite" "$bin/chatsuite"
cp "$gw" "$bin/gateway"
export GATEWAY_USER_RATE_PER_SECOND=1000000 GATEWAY_USER_BURST=1000000 GATEWAY_ADDRESS_RATE_PER_SECOND=1000000 \
  GATEWAY_ADDRESS_BURST=1000000 AUTH_ACCESS_TTL_SECONDS=86400 GATEWAY_REALTIME_HANDSHAKE_BURST=100000 \
  GATEWAY_REALTIME_JOIN_BURST=1000000
"$bin/chatsuite" dev --data-dir /tmp/idle-dev --postgres-port 54369 --port 8380 --log-level warning > "/tmp/idle-dev-$label.log" 2>&1 &
launcher=$!
for _ in $(seq 90); do grep -q "is ready" "/tmp/idle-dev-$label.log" && break; sleep 1; done
gwpid=$(sed 's/\x1b\[[0-9;]*m//g' "/tmp/idle-dev-$label.log" | grep -o "gateway (pid [0-9]*)" | grep -o "[0-9]*")
sleep 3
timeout 600 "$bin/chatsuite" loadgen --gateway http://127.0.0.1:8380 --users "$users" --channels "$channels" --members 10 --sockets 5000 \
  --protocol "$proto" --rate "$rate" --seconds "$send_seconds" --gateway-pid "$gwpid" --idle-seconds "$idle_seconds" --setup-concurrency 6 > "/tmp/idle-lg-$label.log" 2>&1
kill -INT $launcher
wait $launcher
echo "$label $proto: $(grep -o "RSS per idle socket = .*" "/tmp/idle-lg-$label.log") | $(grep -E "^CPU|^latency|^deliveries" "/tmp/idle-lg-$label.log" | tr -s " " | tr "\n" " ")"
