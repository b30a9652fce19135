# Ebb: one image for the bot (`ebb start`), the compaction worker (`ebb worker`) and `ebb migrate`.
# The image runs the compiled JavaScript (each package's dist/) on Node: no tsx, no TypeScript, no
# dev dependencies, no sources.

# The base of the build and of the runtime: the official Node image. Where it cannot be pulled,
# `npm run image` builds this file FROM a base it makes with what that image holds (Debian bookworm,
# Node 20 in /usr/local, the user `node`, uid 1000): deploy/image/base.sh.
ARG BASE=node:20-bookworm-slim

# 1. Every dependency, from the lockfile. Only the manifests are copied, so this layer is cached until
#    a dependency changes. No scripts: the root's `prepare` builds, and the sources are not here yet.
FROM ${BASE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY apps/bot/package.json apps/bot/
COPY bench/package.json bench/
COPY packages/compaction/package.json packages/compaction/
COPY packages/config/package.json packages/config/
COPY packages/core/package.json packages/core/
COPY packages/db/package.json packages/db/
COPY packages/discord/package.json packages/discord/
COPY packages/llm/package.json packages/llm/
COPY packages/logger/package.json packages/logger/
COPY packages/observability/package.json packages/observability/
COPY packages/queue/package.json packages/queue/
COPY packages/slack/package.json packages/slack/
COPY packages/testing/package.json packages/testing/
COPY packages/tools/package.json packages/tools/
COPY packages/web/package.json packages/web/
COPY workers/compaction/package.json workers/compaction/
RUN npm ci --no-audit --no-fund --ignore-scripts

# 2. The build: tsc compiles each package's src/ to dist/. /out keeps what runs: the manifests (the
#    packages' exports point at dist/), dist/, bin/, migrations/ and config.toml.
FROM deps AS build
COPY . .
RUN npm run build \
  && mkdir /out \
  && tar -c --exclude=./node_modules --exclude='./*/*/src' --exclude='./*/*/test' --exclude=./bench \
    --exclude='*.tsbuildinfo' . | tar -x -C /out

# 3. Production dependencies only, from the same cached manifests. npm keeps TypeScript (27 MB) as
#    an optional peer of valibot (@bull-board/api's), which needs it only for types: removed.
FROM deps AS prod-deps
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts \
  && rm -rf node_modules/typescript node_modules/@typescript node_modules/.bin/tsc

# 4. The runtime.
FROM ${BASE}
WORKDIR /app
ENV NODE_ENV=production
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /out ./
# The data directory (EBB_DATA_DIR, ./.ebb): the inbound spool, where messages already acknowledged
# to Slack and Discord wait while Postgres and Redis are both away, and, without DATABASE_URL, the
# embedded database. /app is root's, so `node` gets this one directory. Mount a volume here (compose
# does, for the bot) so a spool outlives the container; no VOLUME line, which would give every
# `migrate`, worker and one-off command an anonymous volume of its own, left behind and never read.
RUN install -d -o node -g node -m 0700 /app/.ebb
USER node
EXPOSE 3000
ENTRYPOINT ["node", "apps/bot/bin/ebb.mjs"]
CMD ["start"]
