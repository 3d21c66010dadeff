#!/bin/bash
# An A/B of two gateway builds in one run (docs/benchmarks.md, part 41): build A replaces the
# running `chatsuite dev` stack's gateway (as gateway-ab.sh does), build B runs beside it as a
# second gateway on :8190 (same environment, its own instance id and admin port), and one
# `chatsuite loadgen` opens twice the plan's sockets, the first half on A and the second half on
# B, each half the whole topology. Every message then reaches ten sockets on each gateway at the
# same moment, so what the machine does meanwhile (the loadgen, the broker, other tenants) meets
# both builds alike, which alternate runs of gateway-ab.sh cannot promise (±10 % between runs).
#
#   bench/gateway-pair.sh LABEL BINARY_A BINARY_B [loadgen options, e.g. --rate 500 --seconds 30]
#   env: WORLD (default /tmp/lg-world-5000.json), DEV_LOG (default /tmp/dev-ab.log), SOCKETS
#        (default 10000: twice the world's 5 000 users), LOADGEN (default .build/release/chatsuite),
#        B_ENV (more environment for B only, e.g. "EVENT_LOOPS=1": a setting's A/B with one binary)
#   output: /tmp/pair-LABEL.log (the report); the last line compares the two gateways' CPU.
set -euo pipefail
label=$1 bin_a=$2 bin_b=$3
shift 3
cd "$(dirname "$0")/.."
dev_log=${DEV_LOG:-/tmp/dev-ab.log}
. bench/swap.sh
swap_service gateway "$bin_a"
gateway_a=$new
# B: A's environment with its own port, admin port and instance id
# (not CHATSUITE_PARENT_PID: a service whose parent is not that launcher exits at once).
mapfile -d '' environment < <(grep -zv '^CHATSUITE_PARENT_PID=' "/proc/$gateway_a/environ")
cp "$bin_b" /tmp/gateway-pair-b
env -i "${environment[@]}" HTTP_PORT=8190 ADMIN_PORT=9190 INSTANCE_ID=gateway-pair-b ${B_ENV:-} \
  setsid /tmp/gateway-pair-b > "/tmp/pair-$label-b.log" 2>&1 &
gateway_b=$!
trap 'kill -INT $gateway_b 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
  sleep 1
  curl -sf http://127.0.0.1:9190/health/ready > /dev/null && curl -sf http://127.0.0.1:9180/health/ready > /dev/null && break
done
sleep 5
brokers=$(grep -o "embedded Kafka: [0-9.:]*" "$dev_log" | awk '{print $3}')
echo "$label: A $gateway_a ($bin_a) on :8180, B $gateway_b ($bin_b) on :8190"
"${LOADGEN:-.build/release/chatsuite}" loadgen --gateway http://127.0.0.1:8180 --second-gateway http://127.0.0.1:8190 \
  --members 10 --sockets "${SOCKETS:-10000}" --brokers "$brokers" --inject kafka --kafka-compression none \
  --watch A="$gateway_a" --watch B="$gateway_b" --world "${WORLD:-/tmp/lg-world-5000.json}" --setup-concurrency 6 "$@" \
  > "/tmp/pair-$label.log" 2>&1
grep -E "^(sockets|sent|deliveries|latency|CPU)|half" "/tmp/pair-$label.log"
# "CPU split … A user 1.23 + system 2.34 s, …"
python3 - "/tmp/pair-$label.log" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
cpu = {name: (float(u), float(s)) for name, u, s in re.findall(r"\b([AB]) user ([0-9.]+) \+ system ([0-9.]+) s", text)}
a, b = cpu["A"], cpu["B"]
print(f"B/A  user {b[0] / a[0]:.3f}  system {b[1] / a[1]:.3f}  total {sum(b) / sum(a):.3f}  (A {sum(a):.2f} s, B {sum(b):.2f} s)")
EOF
