#!/usr/bin/env bash
# Tests of Dispatch with the official Warp Platform Python SDK (warp-platform-sdk, pinned in pyproject.toml): makes .venv
# if needed, installs the pinned SDK and test tools (again only when pyproject.toml changed), then runs
# ruff and pytest. The pytest session starts its own Dispatch server (src/main.ts, Node via
# scripts/node-env.sh); under CI=true a server that cannot start fails the run instead of skipping.
# Extra arguments go to pytest, e.g. ./run-tests.sh -k followup -x
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

python="${PYTHON:-python3}"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python >= 3.10 is needed, found " + sys.version.split()[0])'

if [ ! -x .venv/bin/python ]; then
  echo "creating test/warp-sdk-python/.venv with $("$python" --version)" >&2
  "$python" -m venv .venv
fi

stamp=.venv/.warp-sdk-tests-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
  echo "$want" > "$stamp"
fi

echo "== ruff ==" >&2
.venv/bin/ruff check tests
.venv/bin/ruff format --check tests
echo "== pytest ==" >&2
.venv/bin/python -m pytest "$@"
