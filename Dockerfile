# Ebb: one image for the bot (`ebb start`), the compaction worker (`ebb worker`) and `ebb migrate`.
# Sources run through tsx (no build step); only production dependencies are installed.

# 1. Dependencies, from the lockfile. Only the manifests are copied, so this layer is cached until
#    a dependency changes.
FROM node:20-bookworm-slim AS deps
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
RUN npm ci --omit=dev --no-audit --no-fund

# 2. The runtime: dependencies plus the sources.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
COPY . .
USER node
EXPOSE 3000
ENTRYPOINT ["node", "apps/bot/bin/ebb.mjs"]
CMD ["start"]
