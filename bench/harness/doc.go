// Package harness runs the pg_doorman benchmark behind `make bench`:
// pgbench against PostgreSQL directly, through PgBouncer and through
// pg_doorman, interleaved in one run, and the memory each pooler needs per
// idle client; it writes the results as docs/benchmarks.md.
//
// Run is the whole benchmark. It starts a throwaway PostgreSQL (pgtest),
// fills it with pgbench -i, starts both poolers as child processes with the
// same pool sizes, warms each pooler up at every client count (warmup.go:
// new PostgreSQL backends behind it run slowly for their first seconds),
// runs every case (script x protocol x clients) against
// the three targets back to back for several rounds (rotating their order),
// records each pooler's CPU per transaction from /proc/PID/stat (cpu.go),
// with pgbench's own (its rusage) and the whole PostgreSQL server's (the
// postmaster and its children, reaped ones included: readTreeCPU) beside
// it, so that a table says how many CPUs each run kept busy,
// then runs clients that pause between transactions (pgbench -R; paused.go,
// render_paused.go; alone with BENCH_ONLY=paused), whose pooler CPU and
// context switches are read over a window that excludes the logins
// (window.go), then counts the poolers' system calls with strace -c and
// samples their CPU with perf record during fixed-count runs (profile.go;
// the parsers in strace.go and perf.go; a missing tool is reported, not
// fatal), then
// measures resident memory of fresh pooler instances holding many idle
// authenticated clients, up to what the open-file limit allows
// (fdlimit.go), and renders the Report with render.go. Its TLS
// section (tls.go, render_tls.go; alone with BENCH_ONLY=tls) runs pgbench
// -S and -C with PGSSLMODE=require through both poolers requiring TLS from
// clients with one throwaway certificate, and through plaintext instances
// as the baseline, each warmed up first, with the same CPU per
// transaction; it renders into its own file.
//
// Settings come from BENCH_* environment variables (settings.go). Child
// processes die with the harness (Pdeathsig); PgBouncer runs as the
// postgres OS user when the harness runs as root. Everything listens on
// 127.0.0.1 only. Parsing of pgbench output lives in package bench/pgbench.
//
// The package is not safe for concurrent use: one Run per process, because
// it raises the process's open-file limit and owns its work directory.
package harness
