#!/usr/bin/env bash
# Creates one database and one owning login role per chatsuite service.
# Run by the postgres image from /docker-entrypoint-initdb.d (first start of an empty
# data directory only); safe to re-run by hand:
#   docker-compose exec -e CHATSUITE_DB_PASSWORD postgres \
#     bash /docker-entrypoint-initdb.d/10-chatsuite-databases.sh
set -euo pipefail

: "${CHATSUITE_DB_PASSWORD:?CHATSUITE_DB_PASSWORD must be set (secret)}"
PGUSER="${POSTGRES_USER:-postgres}"
ADMIN_DB="${POSTGRES_DB:-$PGUSER}"

SERVICES=(auth workspace chat presence payment push study)
# database:extension pairs, created here as the superuser (earthdistance is not a trusted
# extension, so a service's own role could not create it).
EXTENSIONS=(workspace:pg_trgm chat:pg_trgm study:cube study:earthdistance)

psql_admin() {
    psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet --username "$PGUSER" "$@"
}

for svc in "${SERVICES[@]}"; do
    echo "chatsuite: ensuring role and database '$svc'"
    # Identifiers/literals are quoted by format(%I/%L); the password never hits the command line.
    psql_admin --dbname "$ADMIN_DB" -v name="$svc" -v pw="$CHATSUITE_DB_PASSWORD" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'name')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'name') \gexec
SELECT format('ALTER ROLE %I WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %L', :'name', :'pw') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'name', :'name')
 WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'name') \gexec
SELECT format('ALTER DATABASE %I OWNER TO %I', :'name', :'name') \gexec
-- Only the owning service (and superusers) may connect to its database.
SELECT format('REVOKE ALL ON DATABASE %I FROM PUBLIC', :'name') \gexec
SELECT format('GRANT ALL ON DATABASE %I TO %I', :'name', :'name') \gexec
SQL
done

for pair in "${EXTENSIONS[@]}"; do
    db="${pair%%:*}"
    ext="${pair#*:}"
    echo "chatsuite: ensuring extension $ext in '$db'"
    psql_admin --dbname "$db" -c "CREATE EXTENSION IF NOT EXISTS $ext"
done
