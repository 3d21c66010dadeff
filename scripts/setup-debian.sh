#!/usr/bin/env bash
# Installs what the suite needs on Debian 12 (idempotent; skips apt when everything is present).
# Swift 6.3 itself is expected on PATH (see README).
set -euo pipefail

packages=(librdkafka-dev pkg-config postgresql postgresql-contrib python3-venv python3-yaml)
[ "${WITH_COMPOSE:-0}" = 1 ] && packages+=(docker-compose)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "swift is not on PATH: install Swift 6.3 (https://www.swift.org/install/linux/debian/12/)" >&2
  exit 1
fi

# Python Socket.IO clients for the real-time tests (Tests/GatewayTests/Realtime/clients): one venv
# per Engine.IO generation, rebuilt only when its requirement list changes.
#   .devdata/pyenv       python-socketio 5 (Engine.IO v4, Socket.IO protocol v5); stomp.py 9 (STOMP over WebSocket)
#   .devdata/pyenv-eio3  python-socketio 4.6.1 + python-engineio 3.14.2 (Engine.IO v3, Socket.IO 2)
cd "$(dirname "$0")/.."
make_venv() {
  local dir="$1"; shift
  local wanted="$*"
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.requirements" 2>/dev/null)" = "$wanted" ]; then return; fi
  echo "creating $dir ($wanted)"
  rm -rf "$dir"
  /usr/bin/python3 -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
  echo "$wanted" > "$dir/.requirements"
}
mkdir -p .devdata
make_venv .devdata/pyenv "python-socketio[client]>=5.11,<6" "websocket-client>=1.6,<2" "requests>=2.31,<3" "stomp.py==9.0.0"
# schemathesis for scripts/fuzz-api.sh (property-based fuzzing of docs/openapi.yaml).
make_venv .devdata/pyenv-fuzz "schemathesis>=4.3,<5"
# DuckDB for scripts/analytics-check.sh (runs docs/analytics.md's SQL over an export).
make_venv .devdata/pyenv-analytics "duckdb==2.0.1"
make_venv .devdata/pyenv-eio3 "python-socketio==4.6.1" "python-engineio==3.14.2" "websocket-client>=0.57,<2" "requests>=2.25,<3" "six>=1.15"
