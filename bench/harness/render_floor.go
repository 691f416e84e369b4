package harness

import (
	"fmt"
	"strings"
)

// renderFloor is section 7: what the I/O shape alone costs, next to both
// poolers.
func renderFloor(b *strings.Builder, r Report) {
	f := r.Floor
	if len(f.Cases) == 0 {
		return
	}
	fmt.Fprintf(b, "## 7. The floor: forwarding alone\n\n")
	fmt.Fprintf(b, "`pgbench -b select-only -c %d` through PgBouncer, pg_doorman and five forwarders (`bench/floor`, each its own process: benchrun started as `benchrun %s`), interleaved, %d round(s), after section 6. Four of them understand nothing of the protocol and give each client its own PostgreSQL connection; they make the same reads and writes per transaction as a pooler, so their cost is the floor of each I/O shape: ", floorClients, ForwarderSubcommand, r.Settings.Rounds)
	fmt.Fprintf(b, "*goroutines* is pg_doorman's shape (a goroutine per direction, internal/rawio's raw reads and writes, Go's netpoller waiting); *epoll-thread* is an event loop blocking its OS thread in epoll_wait, as PgBouncer's does; *epoll-netpoller* is an event loop whose epoll set is waited for through Go's netpoller and read with epoll_wait(0): internal/relay itself, patroni_proxy's forwarding (internal/idlepark waits the same way). The epoll forwarders run %d loop(s). *io-uring* is one loop blocking its OS thread in io_uring_enter, every socket's receive and send an entry of one io_uring: one system call submits the sends a batch of completions asks for and waits for the next ones, where an epoll loop makes a call per read, per write and per wait. ", f.Loops)
	fmt.Fprintf(b, "*txpool* is a transaction pooler reduced to its bones, on one loop of the epoll-netpoller kind: it follows the message boundaries of both directions, lends one of %d server connections to a client from its Query or Sync to the idle ReadyForQuery that answers it, and queues clients FIFO when none is free; each client logs in through a connection of its own, which joins the pool or is closed. It has no prepared-statement rewriting, parameter tracking, timeouts, limits, TLS, admin or metrics. CPU per transaction as in section 1, split into user and system time (/proc/PID/stat).\n\n", f.PoolSize)
	if w := warmUpSentence(f.WarmUps, benchDB, "PgBouncer, pg_doorman and txpool, the three that pool, each", "not counted, as in section 1. The other forwarders give every client a PostgreSQL connection of its own, so their backends are new in every run, as direct PostgreSQL's are in section 1."); w != "" {
		b.WriteString(w + "\n\n")
	}
	b.WriteString("| -M | target | TPS | µs CPU/tx | user µs/tx | system µs/tx | CPU / PgBouncer's |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, c := range f.Cases {
		base := float64(c.CPUPerTx(TargetPgBouncer))
		for _, t := range f.Targets {
			cpu, user := c.CPUPerTx(t), c.UserCPUPerTx(t)
			sys := cpu - user
			if cpu == 0 {
				sys = 0
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.Mode, t, tps(c.TPS(t)), micros(cpu), micros(user), micros(sys), ratio(float64(cpu), base))
		}
	}
	b.WriteString("\n")
	renderFailures(b, f.Cases, f.Targets)
	if len(f.Pooled) == 0 {
		return
	}
	fmt.Fprintf(b, "The same pooler processes with %d clients on pools of %d (-M simple; PgBouncer and pg_doorman configured as in section 3, the txpool forwarder beside them), interleaved, %d round(s); latency from pgbench -l, every transaction. The CPU includes connecting the clients, as in section 1: both poolers check each client's SCRAM proof and log in to PostgreSQL once per pooled connection, while txpool passes every client's login through to a PostgreSQL connection of its own, so at this client count its CPU per transaction is favoured and its latency is the figure to compare:\n\n", pooledClients, f.PoolSize, r.Settings.Rounds)
	b.WriteString("| target | TPS | µs CPU/tx | CPU / PgBouncer's | p50 ms | p99 ms | p99 / p50 |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range f.Pooled {
		base := float64(c.CPUPerTx(TargetPgBouncer))
		for _, t := range f.PooledTargets {
			cpu, l := c.CPUPerTx(t), c.Latency(t)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", t, tps(c.TPS(t)), micros(cpu), ratio(float64(cpu), base), ms(l.P50), ms(l.P99), spread(l))
		}
	}
	b.WriteString("\n")
	renderFailures(b, f.Pooled, f.PooledTargets)
}
