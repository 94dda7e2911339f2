#!/usr/bin/env bash
# What `tether cluster up` and the cluster tests need, on a fresh machine:
# Debian's PostgreSQL (apt-get install postgresql when missing), then the
# Temporal server, temporal-sql-tool and UI server built from their Go modules
# into $TETHER_HOME/cluster-bin/ (default .tether/), once per version.
# Idempotent; progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v pg_ctl >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-cluster: installing Debian's PostgreSQL (apt-get install postgresql) …" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends postgresql >&2
  else
    echo "ensure-cluster: PostgreSQL is missing and this is not a root Debian shell: install it (sudo apt-get install postgresql)" >&2
    exit 1
  fi
fi

node --import tsx scripts/ensure-cluster.ts
