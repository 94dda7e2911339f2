# One image for every Tether process (worker, panel, codec server); the
# compose file picks the command. Sources run through tsx, so there is no
# build step, and the Temporal CLI is not needed: the server runs elsewhere.
FROM node:20-slim

WORKDIR /app
ENV NODE_ENV=production \
    TETHER_HOME=/var/lib/tether

COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY src ./src
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
