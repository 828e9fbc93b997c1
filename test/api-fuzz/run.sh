#!/usr/bin/env bash
# Fuzzes the API from its own OpenAPI document with schemathesis (every check, bounded examples, a fixed
# seed): a live Dispatch on a free loopback port and a throwaway data directory, an admin key, and every
# operation the document lists. Any answer the document does not describe, any 5xx, any schema-valid
# request refused or invalid one accepted, is a failure. Makes test/api-fuzz/.venv on first use.
# Extra arguments go to `schemathesis run`, e.g. ./run.sh --max-examples 50
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
source scripts/node-env.sh

python="${PYTHON:-python3}"
if [ ! -x "$here/.venv/bin/python" ]; then
  echo "creating test/api-fuzz/.venv with $("$python" --version)" >&2
  "$python" -m venv "$here/.venv"
fi
stamp="$here/.venv/.installed"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$here/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  echo "$want" > "$stamp"
fi

data="$(mktemp -d)"
port="$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cleanup() {
  [ -n "${server:-}" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$data"
}
trap cleanup EXIT
# High rate limits: the fuzzer sends thousands of requests with one key.
DISPATCH_DATA_DIR="$data" DISPATCH_PORT="$port" DISPATCH_RATE_LIMIT_PER_MINUTE=1000000 \
  DISPATCH_RATE_LIMIT_BURST=1000000 DISPATCH_LOG_LEVEL=warn \
  node src/main.ts serve > "$data/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$data/server.log" >&2; exit 1; }
  sleep 0.2
done
key="$(DISPATCH_DATA_DIR="$data" node src/main.ts keys create --role admin --name fuzz 2>/dev/null | grep -o 'dsp_[A-Za-z0-9_]*' | head -1)"
[ -n "$key" ] || { echo "could not create an API key" >&2; exit 1; }

status=0
# schemathesis ends with a pytest-style banner ("=== 3 warnings in 23.71s ==="), which readers of a CI
# log take for a pytest run that ran no test: it is reworded as schemathesis's own line.
"$here/.venv/bin/schemathesis" --config-file "$here/schemathesis.toml" run \
  "http://127.0.0.1:$port/api/v1/openapi.json" -H "Authorization: Bearer $key" "$@" 2>&1 |
  sed -E 's/^=+ (.*) in ([0-9.]+s) =+$/schemathesis: \1 (\2)/' || status=$?
if grep -q '"level":50' "$data/server.log"; then
  echo "the server logged errors while fuzzed:" >&2
  grep '"level":50' "$data/server.log" | head -20 >&2
  status=1
fi
exit "$status"
