#!/usr/bin/env bash
# make run: a throwaway PostgreSQL 15 and pg_doorman in front of it.
# Everything lives in .run/ and is removed on exit (Ctrl+C).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh run
make -s build
PGBIN=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
RUN=$PWD/.run
PGPORT=${PGPORT:-15499}
DOORMAN_PORT=${DOORMAN_PORT:-6432}
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
stop() {
  [ -f "$RUN/data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$RUN/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$RUN"
}
stop
mkdir -p "$RUN"
[ "$(id -u)" -eq 0 ] && chown postgres "$RUN" && chmod 755 "$RUN"
as_pg "$PGBIN/initdb" -D "$RUN/data" -A trust -U postgres --no-sync -E UTF8 --locale=C >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$RUN/data" -l "$RUN/postgres.log" -w \
  -o "-p $PGPORT -k $RUN -c listen_addresses=127.0.0.1 -c password_encryption=scram-sha-256" start >/dev/null
trap stop EXIT INT TERM
psql -q -h "$RUN" -p "$PGPORT" -U postgres -c "CREATE ROLE doorman LOGIN PASSWORD 'doorman'" -c "CREATE DATABASE doorman OWNER doorman"
# pg_hba for TCP: scram, so that pg_doorman's SCRAM passthrough is used.
cat > "$RUN/data/pg_hba.conf" <<HBA
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
HBA
as_pg "$PGBIN/pg_ctl" -D "$RUN/data" reload >/dev/null
VERIFIER=$(psql -At -h "$RUN" -p "$PGPORT" -U postgres -c "SELECT rolpassword FROM pg_authid WHERE rolname='doorman'")
cat > "$RUN/pg_doorman.yaml" <<CFG
general:
  host: "127.0.0.1"
  port: $DOORMAN_PORT
  unix_socket_dir: "$RUN"
  admin_username: "admin"
  admin_password: "admin"
pools:
  doorman:
    server_host: "127.0.0.1"
    server_port: $PGPORT
    pool_mode: "transaction"
    users:
      - username: "doorman"
        password: "$VERIFIER"
        pool_size: 20
CFG
cat <<MSG

PostgreSQL 15 is running on 127.0.0.1:$PGPORT (data in $RUN, removed on exit).
pg_doorman listens on 127.0.0.1:$DOORMAN_PORT in transaction mode. Connect with:

    PGPASSWORD=doorman psql -h 127.0.0.1 -p $DOORMAN_PORT -U doorman doorman

Admin console:  PGPASSWORD=admin psql -h 127.0.0.1 -p $DOORMAN_PORT -U admin pgdoorman -c 'SHOW POOLS'
Press Ctrl+C to stop.

MSG
# SIGINT stops it even without a terminal (no binary upgrade here).
PG_DOORMAN_CI_SHUTDOWN_ONLY=1 bin/pg_doorman "$RUN/pg_doorman.yaml"
