#!/bin/bash
# One load-generator run on a fresh `chatsuite dev` stack (docs/benchmarks.md, "Part 3"):
# starts the stack of WORKTREE's release build with the rate limits lifted, waits until it is
# ready, runs `chatsuite loadgen` (5 000 Socket.IO sockets, 500 channels × 10 members, 1 000/s for
# 20 s) watching every server's CPU, then stops the stack. The data directory (/tmp/lg-dev) and
# the world file (/tmp/lg-world-5000.json: the 5 000 accounts, ~5 minutes of bcrypt to make) are
# kept, so alternating builds run against the same database.
#
#   bench/loadgen-stack.sh LABEL WORKTREE [more loadgen options, e.g. --inject rest]
#   output: /tmp/dev-LABEL.log (the stack), /tmp/lg-LABEL.log (the report)
set -euo pipefail
label=$1 wt=$2
shift 2
bin=$wt/.build/release
export GATEWAY_USER_RATE_PER_SECOND=1000000 GATEWAY_USER_BURST=1000000 GATEWAY_ADDRESS_RATE_PER_SECOND=1000000 \
  GATEWAY_ADDRESS_BURST=1000000 AUTH_ACCESS_TTL_SECONDS=86400 GATEWAY_REALTIME_HANDSHAKE_BURST=100000 \
  GATEWAY_REALTIME_JOIN_BURST=1000000
cd "$wt"
"$bin/chatsuite" dev --data-dir /tmp/lg-dev --postgres-port 54349 --port 8180 --log-level warning > "/tmp/dev-$label.log" 2>&1 &
launcher=$!
for _ in $(seq 1 120); do grep -q "is ready" "/tmp/dev-$label.log" && break; sleep 1; done
if ! grep -q "is ready" "/tmp/dev-$label.log"; then
  echo "the stack did not become ready" >&2
  tail "/tmp/dev-$label.log" >&2
  kill -INT $launcher
  exit 1
fi
started=$(grep "started:" "/tmp/dev-$label.log" | sed 's/\x1b\[[0-9;]*m//g')
pid() { echo "$started" | grep -o " $1 (pid [0-9]*)" | grep -o "[0-9]*"; }
postmaster=$(head -1 "$(find /tmp/lg-dev -name postmaster.pid | head -1)")
echo "$label: launcher $launcher gateway $(pid gateway) chat $(pid chat) chat-fanout $(pid chat-fanout) push $(pid push) postgres $postmaster"
sleep 5
status=0
"$bin/chatsuite" loadgen --gateway http://127.0.0.1:8180 --sockets 5000 --channels 500 --members 10 \
  --rate 1000 --seconds 20 --gateway-pid "$(pid gateway)" --watch chat-fanout="$(pid chat-fanout)" --watch push="$(pid push)" \
  --watch chat="$(pid chat)" --watch postgres="$postmaster" --watch-alone broker=$launcher \
  --world /tmp/lg-world-5000.json --setup-concurrency 6 "$@" > "/tmp/lg-$label.log" 2>&1 || status=$?
kill -INT $launcher
wait $launcher || true
exit $status
