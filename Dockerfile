# Dispatch's container image: `node src/main.ts serve` on Node 24 (which runs the TypeScript sources
# directly, so the server has no build step to ship; only its client package is compiled), with git for
# the runs' repositories, bubblewrap for their sandbox, and slirp4netns and nftables for an environment's
# agent_network (its own network, filtered to public addresses). Runs as an unprivileged user.
#
#   docker build -t dispatch .
#   docker run -p 8080:8080 -v dispatch-data:/var/lib/dispatch dispatch
#
# The sandbox needs unprivileged user namespaces and a mountable /proc inside the container; on Docker
# that is `--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt
# systempaths=unconfined`. Without them Dispatch says so at start-up and serves its API but refuses to
# start runs (unless DISPATCH_SANDBOX=none). Kubernetes: manifests/kubernetes (README "Deploying on
# Kubernetes").

ARG NODE_IMAGE=node:24.21.0-slim

# The TypeScript client (clients/typescript, a workspace), which the server imports by its package name
# and which Node loads from its dist/: built with its one dev dependency, the TypeScript compiler. Only its
# package.json and dist/ reach the image.
FROM ${NODE_IMAGE} AS client
WORKDIR /app
COPY package.json package-lock.json ./
COPY clients/typescript ./clients/typescript
RUN npm ci --workspace clients/typescript --ignore-scripts --no-audit --no-fund \
  && npm run build --workspace clients/typescript

# Production dependencies only. `--ignore-scripts` skips the packages' own `prepare` (tsc builds for npm,
# which need the dev dependencies); the one dependency whose install script matters (Claude Code's,
# which links its native binary) is then run by name. The client's workspace link
# (node_modules/@agent-dispatch/client -> clients/typescript) resolves once the runtime stage copies it.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY clients/typescript/package.json ./clients/typescript/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm rebuild @anthropic-ai/claude-code \
  && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
# tini as PID 1: it forwards SIGTERM to Dispatch (which finishes running work, DISPATCH_SHUTDOWN_GRACE_MS)
# and reaps the orphans a killed sandbox can leave behind. Package versions are the base image's Debian
# release's current ones (with its security fixes), not pinned: the archive drops superseded versions.
# hadolint ignore=DL3008
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    bubblewrap ca-certificates git nftables slirp4netns tini \
  && rm -rf /var/lib/apt/lists/*

# A fixed numeric uid, so that Kubernetes' runAsNonRoot can verify it; 10001 stays clear of the image's
# `node` user (1000) and of host users.
RUN groupadd --system --gid 10001 dispatch \
  && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/dispatch --shell /usr/sbin/nologin dispatch \
  && install -d -o 10001 -g 10001 -m 0750 /var/lib/dispatch

WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=client /app/clients/typescript/package.json ./clients/typescript/
COPY --from=client /app/clients/typescript/dist ./clients/typescript/dist
COPY package.json ./
COPY src ./src

ENV NODE_ENV=production \
    DISPATCH_HOST=0.0.0.0 \
    DISPATCH_PORT=8080 \
    DISPATCH_DATA_DIR=/var/lib/dispatch \
    HOME=/var/lib/dispatch
# SQLite database (when DATABASE_URL is unset), run workspaces, the generated signing key.
VOLUME ["/var/lib/dispatch"]
EXPOSE 8080
USER 10001:10001

# Liveness only (the process answers); readiness (/readyz: store reachable, free disk) is the
# orchestrator's business.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.DISPATCH_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

ENTRYPOINT ["/usr/bin/tini", "--", "node", "src/main.ts"]
CMD ["serve"]
