#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test against real PostgreSQL and the embedded
# Kafka cluster (real Kafka protocol). Uses TEST_DATABASE_URL when set; otherwise starts a local
# PostgreSQL under .devdata/test-postgres for the run and stops it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh

start=$(date +%s)
swift build --build-tests
echo "build: $(( $(date +%s) - start )) s"

started_pg=0
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  line=$(.build/debug/chatsuite postgres start --data-dir .devdata/test-postgres --port "${TEST_POSTGRES_PORT:-54339}")
  export TEST_DATABASE_URL="${line#DATABASE_URL=}"
  started_pg=1
fi
cleanup() {
  if [ "$started_pg" = 1 ]; then
    .build/debug/chatsuite postgres stop --data-dir .devdata/test-postgres --port "${TEST_POSTGRES_PORT:-54339}" || true
  fi
}
trap cleanup EXIT

export CHATSUITE_BIN_DIR="$PWD/.build/debug"
tstart=$(date +%s)
# The test binary directly (all tests use Swift Testing), so the parallelism can be bounded: every
# whole-path test runs several services, a broker and database pools, and two cores drown when
# forty of them start at once. Four since the real-time suites (several gateways, fan-out
# processes, thousands of frames) joined: at six, Kafka propagation in unrelated tests sometimes
# exceeded their waits. Extra arguments (e.g. --filter ChatTests) are passed through.
# scripts/watch-tests.py runs it: a failing run ends with the failures again (the lines marked
# ✘), so the tail of a long CI log names them; a run where no test starts or ends for
# TEST_STALL_SECONDS is stopped as stuck, naming the tests still running with a backtrace of the
# process, instead of hanging until CI's own timeout says nothing.
run_tests() {
  scripts/watch-tests.py --stall "${TEST_STALL_SECONDS:-480}" -- \
    .build/debug/chatsuitePackageTests.xctest --testing-library swift-testing \
    --experimental-maximum-parallelization-width "${TEST_PARALLELISM:-4}" "$@"
}
if [ $# -gt 0 ]; then
  run_tests "$@"
else
  # Suites that compare timings within their own run run alone after the rest, so neither
  # disturbs the other: the fault drill (kills processes, freezes a broker, times recoveries)
  # and the slow-client test (readers' latency with stalled sockets against a baseline taken
  # moments before; with three other suites starting stacks on two cores, the baseline and the
  # loaded phase see different machines — CI saw p50 0.47 → 1.42 s that way, 19 s alone).
  # TracingTests bootstraps an OpenTelemetry tracer for its whole process: a process of its own.
  # MemoryTrimTests measures the process's resident bytes around a malloc_trim: other suites
  # allocating in the same process meanwhile moved it (CI saw 69 MB released where 196 MB were
  # holed), so it runs alone too.
  alone='DrillTests|SlowClientTests|TracingTests|MemoryTrimTests'
  run_tests --skip "$alone"
  run_tests --filter SlowClientTests
  run_tests --filter DrillTests
  run_tests --filter TracingTests
  run_tests --filter MemoryTrimTests
  # The suite's broker is EmbeddedKafkaBroker; the Kafka-facing suites run again on the other
  # embedded engine, librdkafka's mock cluster, so that both stay honest (docs/configuration.md,
  # "The embedded broker").
  CHATSUITE_EMBEDDED_KAFKA=mock run_tests --filter 'KafkaTests|DatabaseTests|EventExportTests'
  # Property-based fuzzing of docs/openapi.yaml against a fresh `chatsuite dev` (schemathesis).
  fstart=$(date +%s)
  scripts/fuzz-api.sh
  echo "fuzzing: $(( $(date +%s) - fstart )) s"
  # docs/analytics.md's DuckDB example over an export of known traffic (fails without DuckDB).
  astart=$(date +%s)
  scripts/analytics-check.sh
  echo "analytics example: $(( $(date +%s) - astart )) s"
fi
echo "tests: $(( $(date +%s) - tstart )) s"
