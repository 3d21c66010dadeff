#!/bin/bash
# CPU seconds (user + system, with reaped children) each process spends over a window, read from
# /proc/PID/stat at its start and end (docs/benchmarks.md, part 44: two gateways' idle cost side
# by side while `bench/gateway-pair.sh … --idle-seconds N` holds their sockets open).
#   bench/idle-cpu.sh SECONDS PID [PID …]
set -euo pipefail
window=$1
shift
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"; }
declare -A start
for pid in "$@"; do start[$pid]=$(cpu "$pid"); done
sleep "$window"
for pid in "$@"; do
  echo "$pid $(awk -v a="${start[$pid]}" -v b="$(cpu "$pid")" -v t="$ticks" -v w="$window" \
    'BEGIN { printf "%.2f s CPU over %d s (%.2f %% of a core)", (b - a) / t, w, 100 * (b - a) / t / w }')"
done
