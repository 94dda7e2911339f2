#!/usr/bin/env bash
# The test suite from a fresh clone: set-up, then every test against a real
# Temporal dev server (started once by test/global-setup.ts), then the cluster
# tests against real clusters (`tether cluster up`; the first run builds the
# Temporal server from its Go module, several minutes). Extra arguments go to
# vitest and skip the cluster tests. TETHER_SKIP_TYPECHECK=1 skips
# `tsc --noEmit` and the lint (Biome, and dependency-cruiser for the boundaries);
# TETHER_SKIP_CLUSTER=1 skips the cluster tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
# Everything the tests write to a temporary directory (workspaces, dev servers'
# databases, clusters' PostgreSQL data: hundreds of MB a run) goes under one
# directory, removed when the run ends, however it ends. 755: PostgreSQL runs
# as the `postgres` user and must reach its data directory inside.
tmp_root=$(mktemp -d "${TMPDIR:-/tmp}/tether-tests.XXXXXX")
chmod 755 "$tmp_root"
# A Ctrl-C reaches every process of the run at once: the test servers still
# write their last files as this shell exits, so the removal tries again.
remove_tmp_root() {
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    rm -rf "$tmp_root" 2>/dev/null && return
    sleep 1
  done
  echo "test.sh: could not remove $tmp_root" >&2
}
trap remove_tmp_root EXIT
export TMPDIR=$tmp_root
status=0
if [ -z "${TETHER_SKIP_TYPECHECK:-}" ]; then
  npx tsc --noEmit -p . || status=$?
  npx biome check --error-on-warnings . || status=$?
  npx depcruise src --config .dependency-cruiser.cjs || status=$?
fi
npx vitest run "$@" || status=$?
if [ $# -eq 0 ] && [ -z "${TETHER_SKIP_CLUSTER:-}" ]; then
  npm run test:cluster || status=$?
fi
exit "$status"
