# syntax=docker/dockerfile:1
# The Gradebox server image (docs/DEPLOY.md). Build from the checkout:
#   docker build -t gradebox:0.1.0 .
# Stage `deps` installs the production dependencies only; isolated-vm and better-sqlite3 ship
# prebuilt binaries (glibc and musl, x64 and arm64) in their npm packages, so no compiler is
# needed. Stage `build` compiles the server, sandbox, CLI and SDK to JavaScript and builds the
# isolate's prelude and the web console beside them (scripts/build.ts, `make build`: dist/app);
# esbuild and tsx, which it runs on, are production dependencies. Stage `runtime` copies the
# dependencies and that tree (no TypeScript source), drops npm and runs as UID 10001.
# test/deploy.test.ts parses this file: keep every instruction on its own line(s).

ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY cli ./cli
COPY console ./console
COPY migrations ./migrations
COPY sandbox ./sandbox
COPY sdk ./sdk
COPY server ./server
COPY scripts/build.ts ./scripts/
RUN node --import tsx scripts/build.ts

FROM ${NODE_IMAGE} AS runtime
# Nothing runs npm, npx, corepack or yarn at run time; the app's files stay root-owned
# (read-only to the server), and only ./data (the SQLite default) is the server's to write.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \
 && groupadd --gid 10001 gradebox \
 && useradd --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin gradebox \
 && mkdir -p /app/data \
 && chown 10001:10001 /app/data
WORKDIR /app
# glibc keeps large freed buffers (request bodies, prompts) in its heap once its dynamic mmap
# threshold has grown; a fixed threshold and two arenas give them back (the soak: 633 -> 152 MB)
ENV GRADEBOX_HOST=0.0.0.0 \
    GRADEBOX_PORT=8787 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
# bin/gradebox.js runs dist/app/cli/main.js here (keys, serve): no cli/ sources in the image
COPY bin ./bin
COPY --from=build /app/dist/app ./dist/app
USER 10001:10001
EXPOSE 8787
STOPSIGNAL SIGTERM
# Docker's own check (Kubernetes ignores it and uses the Deployment's probes). No curl in slim images: node asks.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.GRADEBOX_PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# package.json's "start": --no-node-snapshot is required by isolated-vm on Node 24; node is PID 1 and
# handles SIGTERM itself (server/main.ts drains, then exits). Plain node, no loader: the sandbox
# workers it forks are compiled JavaScript too.
CMD ["node", "--no-node-snapshot", "dist/app/server/main.js"]
