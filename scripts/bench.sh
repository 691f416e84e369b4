#!/usr/bin/env bash
# make bench: pgbench against PostgreSQL directly, through PgBouncer and
# through pg_doorman, interleaved, plus memory per idle client; writes
# docs/benchmarks.md. About 12 minutes on 2 cores with the defaults.
# Knobs (environment): BENCH_TIME (seconds per run, 7), BENCH_ROUNDS (2),
# BENCH_SCALE (10), BENCH_CLIENTS (10,100,400), BENCH_JOBS (2),
# BENCH_POOL_SIZE (40), BENCH_PREPARED_CLIENTS (100),
# BENCH_PREPARED_POOL_SIZE (10), BENCH_IDLE_CLIENTS (2000), BENCH_KEEP=1,
# BENCH_JSON=<file> (also save raw results; re-render with
# `go run ./bench/cmd/benchrun -render <file>`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh bench
[ -x bin/pg_doorman ] || make -s build
# 2,000 idle clients need file descriptors in the client and both poolers;
# benchrun raises the soft limit itself, this raises it for everyone else.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
mkdir -p docs
go run ./bench/cmd/benchrun -doorman bin/pg_doorman -out docs/benchmarks.md ${BENCH_JSON:+-json "$BENCH_JSON"} "$@"
