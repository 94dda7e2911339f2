# One image for every Tether process (worker, panel, codec server); the
# compose file picks the command. The CLI runs compiled JavaScript (dist/),
# built in the first stage; the Temporal CLI is not needed: the server runs elsewhere.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
RUN npm run build

FROM node:20-slim

# bubblewrap confines each tool call (no network, read-only root, private /tmp and PIDs); git keeps the workspace checkpoints that forks restore.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap git && rm -rf /var/lib/apt/lists/*

WORKDIR /app
ENV NODE_ENV=production \
    TETHER_HOME=/var/lib/tether

COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# Sources and build from the same stage, so bin/tether.js sees the build as fresh.
COPY --from=build /app/bin ./bin
COPY --from=build /app/src ./src
COPY --from=build /app/dist ./dist
COPY scenarios ./scenarios
COPY tsconfig.json ./

# `tether` on PATH (so `tether …` and `npx tether …` both find it); state and
# default workspaces in a directory the unprivileged user owns.
RUN ln -s /app/bin/tether.js /usr/local/bin/tether \
 && mkdir -p /var/lib/tether \
 && chown node:node /var/lib/tether
USER node

ENTRYPOINT ["tether"]
CMD ["worker", "--metrics-host", "0.0.0.0"]
