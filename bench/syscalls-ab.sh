#!/bin/bash
# The gateway and nginx + nchan over the same 20 s of sending (docs/benchmarks.md, part 23): runs
# bench/gateway-ab.sh with `--peer nchan` and, 4 s into each server's sending, counts its system
# calls, context switches and task clock (`perf stat -p`) and the user and system ticks of all its
# threads (/proc/PID/task/*/stat) for 20 s.
#
#   bench/syscalls-ab.sh LABEL BINARY      (the stack of bench/restack.sh must be running)
#   output: /tmp/syscalls-LABEL-gateway.txt, /tmp/syscalls-LABEL-nchan.txt, and a summary line each
set -euo pipefail
label=$1 bin=$2
cd "$(dirname "$0")/.."
events="-e raw_syscalls:sys_enter -e syscalls:sys_enter_write -e syscalls:sys_enter_writev -e syscalls:sys_enter_epoll_wait"
events="$events -e syscalls:sys_enter_read -e syscalls:sys_enter_futex -e context-switches -e task-clock"
# pid -> "utime stime voluntary involuntary" summed over its threads (ticks of 10 ms).
snapshot() {
  local u=0 s=0 v=0 n=0 f
  for t in /proc/"$1"/task/*; do
    read -r -a f < <(sed 's/.*) //' "$t/stat")
    u=$((u + f[11])); s=$((s + f[12]))
    v=$((v + $(awk '/^voluntary_ctxt/{print $2}' "$t/status"))); n=$((n + $(awk '/^nonvoluntary_ctxt/{print $2}' "$t/status")))
  done
  echo "$u $s $v $n"
}
measure() { # pid output
  local a b
  read -r -a a < <(snapshot "$1")
  perf stat $events -p "$1" -o "$2" -- sleep 20
  read -r -a b < <(snapshot "$1")
  echo "utime $(((b[0] - a[0]) * 10)) ms stime $(((b[1] - a[1]) * 10)) ms voluntary $((b[2] - a[2])) involuntary $((b[3] - a[3]))" >> "$2"
}
rm -f "/tmp/ab-$label.log"
bench/gateway-ab.sh "$label" "$bin" --sockets 5000 --channels 500 --inject kafka --seconds 30 --kafka-compression none --peer nchan > /dev/null 2>&1 &
until grep -q "^chatsuite: sending" "/tmp/ab-$label.log" 2>/dev/null; do sleep 0.5; done
sleep 4
measure "$(pgrep -f 'release/gateway$' | head -1)" "/tmp/syscalls-$label-gateway.txt"
until grep -q "^nginx+nchan: sending" "/tmp/ab-$label.log" 2>/dev/null; do sleep 0.5; done
sleep 4
measure "$(pgrep -f 'nginx: worker' | head -1)" "/tmp/syscalls-$label-nchan.txt"
wait
for server in gateway nchan; do
  echo "$server: $(grep -E 'sys_enter|context-switches|task-clock' "/tmp/syscalls-$label-$server.txt" | awk '{print $2 "=" $1}' | tr '\n' ' ')$(tail -1 "/tmp/syscalls-$label-$server.txt")"
done
