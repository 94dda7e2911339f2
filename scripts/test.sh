#!/usr/bin/env bash
# The test suite from a fresh clone: set-up, then every test against a real Temporal dev server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
npx tsc --noEmit
npx vitest run "$@"
