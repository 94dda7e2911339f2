#!/usr/bin/env bash
# The demo from a fresh clone: set-up, then `tether demo` (server, worker, panel, a scripted agent run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node bin/tether.js demo "$@"
