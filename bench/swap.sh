# Sourced by the A/B scripts (gateway-ab.sh, upload-ab.sh), run from the checkout's root.
# `pid NAME`: the running stack's process of executable NAME (started from .build/release).
# `swap_service SERVICE BINARY`: copies BINARY over .build/release/SERVICE, kills the stack's
# process of it and waits (up to 60 s) until the launcher has restarted it from the new binary;
# `new` is then its pid.
pid() { pgrep -f "release/$1\$" | head -1; }
swap_service() {
  local service=$1 bin=$2 old
  cp "$bin" ".build/release/$service.new" && mv ".build/release/$service.new" ".build/release/$service"
  old=$(pid "$service")
  kill -9 "$old"
  for _ in $(seq 1 60); do
    sleep 1
    new=$(pid "$service" || true)
    [ -n "$new" ] && [ "$new" != "$old" ] && break
  done
}
