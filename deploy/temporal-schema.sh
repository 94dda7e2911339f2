#!/bin/sh
# Creates Temporal's two PostgreSQL databases if needed and brings their
# schemas up to the version of the server release. Safe to re-run: on an
# upgrade (a newer server) it applies the new steps.
#
# docker-compose.yml runs it in the admin-tools image (the tool on PATH, the
# schema in /etc/temporal/schema); `tether cluster up` runs it with the tool
# and schema it built (TEMPORAL_SQL_TOOL, TEMPORAL_SCHEMA_DIR) after waiting
# for PostgreSQL itself.
set -eu

SCHEMA_DIR="${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}"
SQL_TOOL="${TEMPORAL_SQL_TOOL:-temporal-sql-tool}"
sql() {
  "$SQL_TOOL" --plugin postgres12 --ep "${POSTGRES_SEEDS}" -p "${DB_PORT}" -u "${POSTGRES_USER}" "$@"
}

if command -v nc >/dev/null 2>&1; then
  until nc -z "${POSTGRES_SEEDS}" "${DB_PORT}"; do
    echo "waiting for PostgreSQL at ${POSTGRES_SEEDS}:${DB_PORT} …"
    sleep 2
  done
fi

for db in temporal temporal_visibility; do
  dir=temporal
  [ "$db" = temporal_visibility ] && dir=visibility
  sql --db "$db" create || true # already there
  sql --db "$db" setup-schema -v 0.0 || true # already versioned
  sql --db "$db" update-schema -d "${SCHEMA_DIR}/${dir}/versioned"
done
echo "Temporal schemas are up to date"
