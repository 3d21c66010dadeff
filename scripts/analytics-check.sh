#!/usr/bin/env bash
# docs/analytics.md's worked example, as CI runs it: AnalyticsExampleTests publishes known traffic
# on an embedded broker, exports it like `chatsuite events export`, runs the page's SQL through
# DuckDB (PyPI, pinned in scripts/setup-debian.sh, venv .devdata/pyenv-analytics) and compares
# the answers with the traffic sent. Fails (instead of skipping) when DuckDB is missing.
#
#   scripts/analytics-check.sh          # after `swift build --build-tests`
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .devdata/pyenv-analytics/bin/python ]; then scripts/setup-debian.sh; fi
export CHATSUITE_BIN_DIR="$PWD/.build/debug"
CHATSUITE_ANALYTICS_REQUIRED=1 .build/debug/chatsuitePackageTests.xctest --testing-library swift-testing \
  --filter 'AnalyticsExampleTests|EventExportTests|EventSchemaTests'
