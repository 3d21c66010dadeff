#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs the whole suite on the embedded defaults:
# local PostgreSQL (under .devdata/), the embedded Kafka broker, all eight executables.
# Extra arguments go to `chatsuite dev` (see `chatsuite dev --help`). Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
swift build
exec .build/debug/chatsuite dev "$@"
