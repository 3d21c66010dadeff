#!/bin/bash
# One run of an A/B between builds of the service that parses an upload (docs/benchmarks.md,
# "Multipart uploads"), on a running `chatsuite dev` stack started from .build/release:
#   GATEWAY_USER_RATE_PER_SECOND=1000000 GATEWAY_USER_BURST=1000000 GATEWAY_ADDRESS_RATE_PER_SECOND=1000000 \
#   GATEWAY_ADDRESS_BURST=1000000 AUTH_ACCESS_TTL_SECONDS=86400 \
#     .build/release/chatsuite dev --data-dir /tmp/up-dev --postgres-port 54359 --port 8190 --log-level warning > /tmp/dev-up.log 2>&1 &
#
#   bench/upload-ab.sh LABEL SERVICE BINARY [chatsuite bench upload options, e.g. --phases profile]
# Copies BINARY over .build/release/SERVICE, kills the stack's process of it (the launcher
# restarts it from the new binary), runs `chatsuite bench upload` against the gateway on 8190 and
# prints the CPU seconds SERVICE and the gateway used during the run.
set -euo pipefail
label=$1 service=$2 bin=$3
shift 3
cd "$(dirname "$0")/.."
. bench/swap.sh
swap_service "$service" "$bin"
sleep 5
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks=$(getconf CLK_TCK)
gateway=$(pid gateway)
s0=$(cpu "$new") g0=$(cpu "$gateway")
echo "$label: $service $new (binary $bin)"
.build/release/chatsuite bench upload --gateway http://127.0.0.1:8190 "$@"
s1=$(cpu "$new") g1=$(cpu "$gateway")
seconds() { awk -v a="$1" -v b="$2" -v t="$ticks" 'BEGIN { printf "%.2f", (b - a) / t }'; }
echo "$label: CPU $service $(seconds "$s0" "$s1") s, gateway $(seconds "$g0" "$g1") s"
