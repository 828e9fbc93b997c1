#!/usr/bin/env bash
# Sourced by the other scripts: puts a Node.js >= 22.13 first on PATH. The build machines ship Node 20,
# so when the system Node is older we install node@24 from the npm registry into a cache directory
# (the `node` package fetches its binary from the registry too, so no other network is needed).
node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=13)?0:1)'
}
if ! node_ok; then
  cache="${DISPATCH_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-dispatch/node24}"
  if [ ! -x "$cache/node_modules/node/bin/node" ]; then
    echo "Node $(node -v 2>/dev/null || echo missing) is older than 22.13: installing node@24 into $cache" >&2
    mkdir -p "$cache"
    npm install --prefix "$cache" --no-audit --no-fund --loglevel=error node@24 >&2
  fi
  export PATH="$cache/node_modules/node/bin:$cache/node_modules/.bin:$PATH"
  node_ok || { echo "could not provide Node >= 22.13" >&2; exit 1; }
fi
