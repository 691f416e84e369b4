package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// profileReport is testReport with section 1 CPU figures, strace counts,
// perf profiles and the idle-client limit.
func profileReport() Report {
	r := testReport()
	for _, name := range []string{TargetPgBouncer, TargetDoorman} {
		per := map[string]time.Duration{TargetPgBouncer: 100 * time.Microsecond, TargetDoorman: 300 * time.Microsecond}[name]
		for i := range r.Matrix[0].Runs[name] {
			r.Matrix[0].Runs[name][i].PoolerCPU = per // 10 transactions a round
		}
	}
	simple := profileCase("simple")
	r.Syscalls = []SyscallResult{
		{Pooler: TargetPgBouncer, Case: simple, Txs: 1000, Calls: []SyscallCount{
			{Name: "recvfrom", Calls: 2000}, {Name: "sendto", Calls: 1000}, {Name: "epoll_wait", Calls: 500},
			{Name: "accept", Calls: 20, Errors: 10},
		}},
		{Pooler: TargetDoorman, Case: simple, Txs: 1000, Calls: []SyscallCount{
			{Name: "read", Calls: 3000, Errors: 1500}, {Name: "write", Calls: 1000}, {Name: "epoll_pwait", Calls: 250},
			{Name: "futex", Calls: 400}, {Name: "nanosleep", Calls: 100}, {Name: "sched_yield", Calls: 50},
		}},
		{Pooler: TargetDoorman, Case: profileCase("extended"), Err: toolMissing("strace", "strace")},
	}
	r.Profiles = []ProfileResult{
		{Pooler: TargetPgBouncer, Case: simple, Txs: 1000, CPU: 20 * time.Millisecond,
			Perf: PerfProfile{Samples: 200, KernelSamples: 180, Top: []Symbol{{Name: "tcp_sendmsg_locked", Kernel: true, Samples: 50}, {Name: "event_base_loop", Samples: 10}}}},
		{Pooler: TargetDoorman, Case: simple, Txs: 1000, CPU: 40 * time.Millisecond,
			Perf: PerfProfile{Samples: 400, KernelSamples: 300, Top: []Symbol{{Name: "runtime.mallocgc", Samples: 100}}}},
	}
	r.IdleLimit = newIdleLimit(20000, 0)
	r.Idle = append(r.Idle, IdleResult{Pooler: TargetPgBouncer, Clients: 19000, Opened: 19000, AtLimit: true,
		Started: Memory{RSS: 8 << 20}, Before: Memory{RSS: 8 << 20}, AtOnce: Memory{RSS: 8<<20 + 19000*500},
		After: Memory{RSS: 8<<20 + 19000*500}, ConnectTime: 42 * time.Second})
	return r
}

func TestRenderProfiles(t *testing.T) {
	t.Parallel()
	md := Render(profileReport())
	for _, want := range []string{
		// section 1 CPU: pgbouncer 200 µs / 20 tx, pg_doorman 600 µs / 20 tx
		"| select-only | simple | 400 | 2000 | 3000 | 1.50 | 10.0 | 30.0 | 3.00 |",
		"## 5. Syscalls per transaction",
		"-c 10 -t 2000",
		"| pgbouncer | simple | 1000 | 2.00 | 0.00 | 1.00 | 0.50 | 0.00 | 0.00 | 0.02 | 3.52 |",
		"| pg_doorman | simple | 1000 | 3.00 | 1.50 | 1.00 | 0.25 | 0.40 | 0.10 | 0.05 | 4.80 |",
		"- pg_doorman, select-only -M extended -c 10: strace is not installed (Debian: apt-get install strace",
		"## 6. Where the CPU goes",
		// 20 ms / 1000 tx = 20 µs, 90% kernel
		"| pgbouncer | 1000 | 200 | 90% | 20.0 | 18.0 | 2.0 |",
		"| pg_doorman | 1000 | 400 | 75% | 40.0 | 30.0 | 10.0 |",
		"| # | pgbouncer | % | pg_doorman | % |",
		"| 1 | [k] `tcp_sendmsg_locked` | 25.0 | [.] `runtime.mallocgc` | 25.0 |",
		"| 2 | [.] `event_base_loop` | 5.0 |  |  |",
		"| pgbouncer | 19000 of 19000 | 8.0 MiB | 0 KiB | 8.0 MiB | 17.1 MiB | 17.1 MiB |",
		"RLIMIT_NOFILE hard limit 20000 here",
		"max = 20000 - 1000 kept free = 19000.",
		"50000 idle clients were not run",
		"for each count (2000, max)",
	} {
		require.Contains(t, md, want)
	}
}

func TestRenderProfilesMissing(t *testing.T) {
	t.Parallel()
	r := testReport()
	r.Profiles = []ProfileResult{{Pooler: TargetPgBouncer, Case: profileCase("simple"), Err: toolMissing("perf", "linux-perf")}}
	md := Render(r)
	require.Contains(t, md, "- pgbouncer, select-only -M simple -c 10: perf is not installed (Debian: apt-get install linux-perf")
	require.NotContains(t, md, "Top 12 symbols")
	require.Contains(t, md, "## 5. Syscalls per transaction")
	require.Contains(t, md, "Not measured in this run.", "no strace results at all")
	require.NotContains(t, md, "RLIMIT_NOFILE", "no limit recorded")
}

func TestIdleLimitNote(t *testing.T) {
	t.Parallel()
	require.Contains(t, idleLimitNote(newIdleLimit(20000, 500)), "BENCH_IDLE_MAX lowered it to 500 for this run.")
	require.NotContains(t, idleLimitNote(newIdleLimit(100000, 0)), "were not run", "50,000 fits")
	require.Empty(t, idleLimitNote(IdleLimit{}))
}
