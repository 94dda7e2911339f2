#!/bin/sh
# Creates Temporal's two PostgreSQL databases if needed and brings their
# schemas up to the version this admin-tools image ships. Safe to re-run: on
# an upgrade (a newer TEMPORAL_ADMINTOOLS_VERSION) it applies the new steps.
set -eu

SCHEMA_DIR=/etc/temporal/schema/postgresql/v12
sql() {
  temporal-sql-tool --plugin postgres12 --ep "${POSTGRES_SEEDS}" -p "${DB_PORT}" -u "${POSTGRES_USER}" "$@"
}

until nc -z "${POSTGRES_SEEDS}" "${DB_PORT}"; do
  echo "waiting for PostgreSQL at ${POSTGRES_SEEDS}:${DB_PORT} …"
  sleep 2
done

for db in temporal temporal_visibility; do
  dir=temporal
  [ "$db" = temporal_visibility ] && dir=visibility
  sql --db "$db" create || true # already there
  sql --db "$db" setup-schema -v 0.0 || true # already versioned
  sql --db "$db" update-schema -d "${SCHEMA_DIR}/${dir}/versioned"
done
echo "Temporal schemas are up to date"
