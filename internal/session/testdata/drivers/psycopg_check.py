"""psycopg 3 against pg_doorman (or PostgreSQL itself, to check that every
expectation below is PostgreSQL's behaviour).

Usage: python3 psycopg_check.py MODE [CONNINFO]
MODE is one of: prepared, pipeline, discard, evict. CONNINFO defaults to ""
so that libpq reads PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
Prints "ok psycopg MODE ..." and exits 0, or prints what went wrong and
exits 1.

psycopg with prepare_threshold=0 prepares every query with parameters under
the name _pg3_<n>, numbered per connection, so concurrent connections use
the same names for different SQL.
"""

import os
import sys
import threading

import psycopg
from psycopg import errors

THREADS = int(os.environ.get("CLIENTS", "12"))
ITERATIONS = int(os.environ.get("ITERATIONS", "20"))


STATS, STATS_LOCK = {}, threading.Lock()


class Failure(Exception):
    pass


def expect_eq(got, want, what):
    if got != want:
        raise Failure(f"{what}: got {got!r}, want {want!r}")


def expect_error(exc_type, what, fn):
    try:
        fn()
    except exc_type:
        return
    except Exception as e:  # noqa: BLE001 - report any other error precisely
        raise Failure(f"{what}: got {type(e).__name__}: {e}, want {exc_type.__name__}")
    raise Failure(f"{what}: succeeded, want {exc_type.__name__}")


def connect(conninfo, **kw):
    return psycopg.connect(conninfo, prepare_threshold=0, autocommit=True, connect_timeout=10, **kw)


def one(conn, query, params):
    return conn.execute(query, params).fetchone()[0]


def prepared_client(conninfo, i):
    """Every query prepared, errors in the middle, a rolled back transaction."""
    n = 0
    with connect(conninfo) as conn:
        # The first statement of every connection is _pg3_0, different SQL each.
        expect_eq(one(conn, f"SELECT %s::int + {i * 1000}", (0,)), i * 1000, "first statement")
        for j in range(ITERATIONS):
            expect_eq(one(conn, f"SELECT %s::int + {i * 1000}", (j,)), i * 1000 + j, "per-client SQL")
            expect_eq(one(conn, "SELECT %s::int * 2", (i * 100 + j,)), 2 * (i * 100 + j), "shared SQL")
            expect_eq(one(conn, "SELECT %s::text || %s::text", (f"c{i}", f"-{j}")), f"c{i}-{j}", "text")
            n += 3
            if j % 4 == 1:
                expect_error(errors.DivisionByZero, "division by zero",
                             lambda: one(conn, "SELECT 100 / %s::int", (0,)))
                expect_eq(one(conn, "SELECT 100 / %s::int", (j + 1,)), 100 // (j + 1), "after the error")
                n += 2
            if j % 6 == 3:
                # psycopg answers a ROLLBACK with DEALLOCATE ALL and prepares
                # everything again under new names.
                with conn.transaction(force_rollback=True):
                    expect_eq(one(conn, f"SELECT %s::int + {i * 1000}", (-j,)), i * 1000 - j, "in a transaction")
                    expect_eq(one(conn, "SELECT %s::int * 2", (j,)), 2 * j, "shared in a transaction")
                n += 2
    return f"{n} queries"


def psycopg_thinks_prepared(conn, query):
    """Whether psycopg will send only Bind for query (with %s placeholders
    turned into $n), reading its private statement cache."""
    sql = query.replace("%s", "$1").encode()
    return any(key[0] == sql for key in conn._prepared._names)


def pipeline_client(conninfo, i):
    """Pipeline mode: batches, an error in the middle, then more work.

    psycopg 3.1 may keep a statement whose Parse PostgreSQL skipped after
    the error in its cache (depending on when it read the results): it
    then sends only Bind for it, and PostgreSQL answers 26000. The pooler
    must answer the same, not run a statement the server never prepared.
    """
    n = 0
    with connect(conninfo) as conn:
        for j in range(ITERATIONS // 2):
            skipped = f"SELECT %s::text || 'skipped{j}'"
            curs = []

            def failing_batch():
                # psycopg raises the error from whichever call reads it:
                # an execute() or the sync().
                with conn.pipeline() as p:
                    curs.extend(conn.execute(f"SELECT %s::int + {i * 1000}", (k,)) for k in range(5))
                    conn.execute("SELECT 100 / %s::int", (0,))
                    conn.execute(skipped, (f"c{i}",))
                    p.sync()

            expect_error(errors.DivisionByZero, "error inside the pipeline", failing_batch)
            for k, cur in enumerate(curs):
                expect_eq(cur.fetchone()[0], i * 1000 + k, "before the error")
            # More work on the same connection, in a pipeline again.
            with conn.pipeline() as p:
                c_more = conn.execute(f"SELECT %s::int + {i * 1000}", (42,))
                c_div = conn.execute("SELECT 100 / %s::int", (4,))
                c_new = conn.execute(f"SELECT %s::int - {j}", (i,))
                p.sync()
                expect_eq(c_more.fetchone()[0], i * 1000 + 42, "after the error")
                expect_eq(c_div.fetchone()[0], 25, "the failed statement, again")
                expect_eq(c_new.fetchone()[0], i - j, "a new statement after the error")
                want = "26000" if psycopg_thinks_prepared(conn, skipped) else "value"
                c_again = conn.execute(skipped, (f"c{i}",))
                try:
                    p.sync()
                    expect_eq(c_again.fetchone()[0], f"c{i}skipped{j}", "the skipped statement, again")
                    got = "value"
                except errors.InvalidSqlStatementName:
                    got = "26000"
                expect_eq(got, want, "the statement whose Parse was skipped, run again")
                with STATS_LOCK:
                    STATS[want] = STATS.get(want, 0) + 1
                n += 12
            with conn.pipeline(), conn.cursor() as cur:
                cur.executemany("SELECT %s::int * 3", [(k + i,) for k in range(5)], returning=True)
                for k in range(5):
                    expect_eq(cur.fetchone()[0], (k + i) * 3, "executemany")
                    cur.nextset()
                n += 5
        expect_eq(one(conn, f"SELECT %s::int + {i * 1000}", (7,)), i * 1000 + 7, "after the pipelines")
        n += 1
    return f"{n} queries"


def discard(conninfo):
    """DISCARD ALL and DEALLOCATE ALL forget the connection's statements,
    sent as a simple query or through the extended protocol (as psycopg
    sends its own commands); the names can then be prepared again with other
    SQL (libpq's PQprepare/PQexecPrepared)."""
    ok, sqlstate = psycopg.pq.ExecStatus.COMMAND_OK, psycopg.pq.DiagnosticField.SQLSTATE
    with connect(conninfo) as conn:
        pg = conn.pgconn
        rounds = [(b"DISCARD ALL", False), (b"DEALLOCATE ALL", False), (b"DISCARD ALL", True), (b"DEALLOCATE ALL", True)]
        for rnd, (cmd, extended) in enumerate(rounds):
            how = f"{cmd.decode()} ({'extended' if extended else 'simple'} protocol)"
            for k in range(3):
                res = pg.prepare(f"s{k}".encode(), f"SELECT $1::int + {rnd * 100 + k}".encode())
                expect_eq(res.status, ok, f"prepare s{k} before {how}: {res.error_message!r}")
            for k in range(3):
                res = pg.exec_prepared(f"s{k}".encode(), [b"1"])
                expect_eq(res.status, psycopg.pq.ExecStatus.TUPLES_OK, f"execute s{k} before {how}: {res.error_message!r}")
                expect_eq(res.get_value(0, 0), str(rnd * 100 + k + 1).encode(), f"s{k} before {how}")
            res = pg.exec_params(cmd, []) if extended else pg.exec_(cmd)
            expect_eq(res.status, ok, f"{how}: {res.error_message!r}")
            res = pg.exec_prepared(b"s0", [b"1"])
            expect_eq(res.error_field(sqlstate), b"26000", f"s0 after {how}")
    # psycopg itself does not notice a DISCARD ALL (that it prepares, with
    # prepare_threshold=0): its next execution of a statement it prepared
    # fails, with PostgreSQL as through the pooler.
    with connect(conninfo) as conn:
        expect_eq(one(conn, "SELECT %s::int", (1,)), 1, "psycopg prepared")
        conn.execute("DISCARD ALL")
        expect_error(errors.InvalidSqlStatementName, "psycopg statement after DISCARD ALL",
                     lambda: one(conn, "SELECT %s::int", (2,)))
    return f"{len(rounds)} rounds"


def evict(conninfo):
    """More distinct statements than prepared_max: psycopg sends the SQL
    command DEALLOCATE _pg3_<n> for the oldest one."""
    with connect(conninfo) as conn:
        conn.prepared_max = 5
        for k in range(20):
            expect_eq(one(conn, f"SELECT %s::int + {k}", (1,)), k + 1, f"statement {k}")
        for k in range(15, 20):
            expect_eq(one(conn, f"SELECT %s::int + {k}", (2,)), k + 2, f"statement {k} again")
    return "20 statements, prepared_max 5"


def concurrently(fn, conninfo):
    results, failures = [None] * THREADS, []

    def run(i):
        try:
            results[i] = fn(conninfo, i)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            failures.append(f"client {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=run, args=(i,), name=f"client-{i}") for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
        if t.is_alive():
            failures.append(f"{t.name}: still running after 30 s")
    if failures:
        raise Failure("; ".join(failures))
    total = sum(int(r.split()[0]) for r in results)
    return f"{THREADS} clients {total} queries"


MODES = {
    "prepared": lambda ci: concurrently(prepared_client, ci),
    "pipeline": lambda ci: concurrently(pipeline_client, ci),
    "discard": discard,
    "evict": evict,
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        print(f"usage: {sys.argv[0]} {'|'.join(MODES)} [conninfo]", file=sys.stderr)
        return 2
    mode = sys.argv[1]
    conninfo = sys.argv[2] if len(sys.argv) > 2 else ""
    if not psycopg.Pipeline.is_supported():
        print("FAIL: libpq without pipeline mode (needs libpq 14+)", file=sys.stderr)
        return 1
    try:
        detail = MODES[mode](conninfo)
    except Exception as e:  # noqa: BLE001 - the message is the test's output
        print(f"FAIL: {mode}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if STATS:
        print("skipped statement run again:", ", ".join(f"{v} gave {k}" for k, v in sorted(STATS.items())))
    print(f"ok psycopg {psycopg.__version__} {mode} {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
