#!/usr/bin/env bash
# make soak: 400 pgx clients for 30 minutes through pg_doorman in front of a
# throwaway PostgreSQL 15, mixed work (pgbench -S and tpcb-like, prepared
# statements, COPY in/out, 10 MB results, clients killed at random), pg_doorman's
# RSS, heap and goroutines sampled every minute; exits non-zero when an
# unexpected error happened or the RSS after warm-up moved more than 5 %
# and more than 4 MiB.
# Knobs (environment): SOAK_DURATION (30m), SOAK_CLIENTS (400),
# SOAK_POOL_SIZE (40), SOAK_INTERVAL (1m), SOAK_WARMUP (5m, or a third of a
# shorter run), SOAK_SCALE (10), SOAK_RSS_TOLERANCE (0.05), SOAK_RSS_SLACK
# (4, MiB), SOAK_KILLS=0 (no kills), SOAK_OUT=<file> (also write the
# Markdown table there).
# Not part of make test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh run
make -s build
# Every client holds a socket here and in pg_doorman; the command raises its
# own soft limit, this raises it for the children too.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
go build -o bin/soak ./bench/cmd/soak
exec bin/soak -doorman bin/pg_doorman "$@"
