#!/usr/bin/env bash
# Property-based fuzzing of the REST API: schemathesis (PyPI) generates valid and invalid requests
# for every operation of docs/openapi.yaml and sends them to a fresh `chatsuite dev` suite. The run
# fails on any 5xx and on any answer outside the document (status, content type, JSON schema).
#
#   scripts/fuzz-api.sh                  # after `swift build`; FUZZ_EXAMPLES=N per operation (25)
#
# The suite runs on ports FUZZ_PORT.. (18380) with its data in a temporary directory; rate limits
# are lifted so the fuzzer measures answers, not the limiter (429 is documented everywhere anyway);
# Kakao and PortOne are small local fakes (scripts/fuzz-fakes.py), as in the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
port="${FUZZ_PORT:-18380}"
examples="${FUZZ_EXAMPLES:-25}"
venv=.devdata/pyenv-fuzz
if [ ! -x "$venv/bin/schemathesis" ]; then scripts/setup-debian.sh; fi

data="$(mktemp -d /tmp/chatsuite-fuzz.XXXXXX)"
fakes_port=$((port + 50))
python3 scripts/fuzz-fakes.py "$fakes_port" &
fakes=$!
KAKAO_API_URL="http://127.0.0.1:$fakes_port/kakao" PAYMENT_PORTONE_URL="http://127.0.0.1:$fakes_port/portone" \
PAYMENT_PORTONE_API_KEY=fuzz PAYMENT_PORTONE_API_SECRET=fuzz \
GATEWAY_USER_RATE_PER_SECOND=100000 GATEWAY_USER_BURST=100000 GATEWAY_ADDRESS_RATE_PER_SECOND=100000 GATEWAY_ADDRESS_BURST=100000 \
  .build/debug/chatsuite dev --port "$port" --data-dir "$data" --postgres-port $((port + 40)) >"$data/dev.log" 2>&1 &
dev=$!
stop() {
  kill -INT "$dev" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$dev" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$dev" 2>/dev/null || true
  kill "$fakes" 2>/dev/null || true
  cp "$data/dev.log" /tmp/chatsuite-fuzz-dev.log 2>/dev/null || true
  rm -rf "$data"
}
trap stop EXIT

base="http://127.0.0.1:$port"
for i in $(seq 1 240); do
  # Readiness is on the gateway's admin listener (its port + 1000), not the public port.
  if curl -fsS -o /dev/null "http://127.0.0.1:$((port + 1000))/health/ready" 2>/dev/null; then break; fi
  if ! kill -0 "$dev" 2>/dev/null; then cat "$data/dev.log"; echo "chatsuite dev exited" >&2; exit 1; fi
  [ "$i" = 240 ] && { tail -50 "$data/dev.log"; echo "the suite was not ready after 120 s" >&2; exit 1; }
  sleep 0.5
done

# One account whose access token authenticates the generated requests.
email="fuzz$(date +%s)@example.com"
joined=$(curl -fsS -X POST "$base/v1/users/join" -H "SesacKey: dev-key" -H "Content-Type: application/json" \
  -d "{\"email\":\"$email\",\"password\":\"fuzzing-password-1\",\"nickname\":\"fuzzer\"}")
token=$("$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["token"]["accessToken"])' <<<"$joined")

echo "schemathesis: $examples examples per operation against $base"
# scripts/schemathesis-run.py is the schemathesis CLI with ast.parse serialised (a CPython 3.11 race).
"$venv/bin/python" scripts/schemathesis-run.py run docs/openapi.yaml --url "$base" \
  -H "SesacKey: dev-key" -H "Authorization: $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --max-examples "$examples" --seed "${FUZZ_SEED:-20261125}" --workers 2 --request-timeout 20 \
  --suppress-health-check all --warnings off --no-color
