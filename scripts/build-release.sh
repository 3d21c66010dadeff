#!/usr/bin/env bash
# Runs deploy/Dockerfile's builder stage directly (no Docker engine needed): every product of
# its PRODUCTS argument built with the same `swift build -c release --static-swift-stdlib`
# command, then the staging checks the image copies rely on (each binary, the resource bundles).
# CI runs it so a release or static-link failure shows before an image build would.
set -euo pipefail
cd "$(dirname "$0")/.."
products=$(sed -n 's/^ARG PRODUCTS="\(.*\)"$/\1/p' deploy/Dockerfile)
[ -n "$products" ] || { echo "no ARG PRODUCTS line in deploy/Dockerfile" >&2; exit 1; }
start=$(date +%s)
for product in $products; do
  swift build -c release --static-swift-stdlib --product "$product"
done
bin="$(swift build -c release --show-bin-path)"
for product in $products; do
  [ -x "$bin/$product" ] || { echo "release build made no $bin/$product" >&2; exit 1; }
done
ls -d "$bin"/*.resources >/dev/null || { echo "no resource bundle beside the release binaries" >&2; exit 1; }
"$bin/chatsuite" --version
echo "release build of $(echo $products | wc -w) products: $(( $(date +%s) - start )) s"
