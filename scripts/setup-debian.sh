#!/usr/bin/env bash
# Installs what the suite needs on Debian 12 (idempotent; skips apt when everything is present).
# Swift 6.3 itself is expected on PATH (see README).
set -euo pipefail

packages=(librdkafka-dev libcrypt-dev pkg-config postgresql postgresql-contrib)
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
