#!/usr/bin/env bash
# The test suite from a fresh clone: set-up, then every test against a real
# Temporal dev server (started once by test/global-setup.ts). Extra arguments
# go to vitest. TETHER_SKIP_TYPECHECK=1 skips `tsc --noEmit`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
status=0
if [ -z "${TETHER_SKIP_TYPECHECK:-}" ]; then
  npx tsc --noEmit -p . || status=$?
fi
npx vitest run "$@" || status=$?
exit "$status"
