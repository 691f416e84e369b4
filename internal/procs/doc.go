// Package procs runs pg_doorman on one P (GOMAXPROCS=1) while one is
// enough, and on the runtime's default number of Ps once it is not.
//
// Why: with two Ps and a light load, most of a transaction's wake-ups go
// from one thread to the other (a goroutine readied on one P, the idle
// other P's thread woken through a futex to run it), and the receivers a
// write wakes preempt a thread more often; on the 2-CPU bench machine a
// single P spends 14–20 % less CPU per transaction at 10 and 40 clients
// (docs/benchmarks.md, fourteenth pass; the thresholds below take the
// first and leave the second, whose wait is close to the load's). Under load one P loses: when the
// machine's CPUs are contended (PostgreSQL on the same host, 100 clients
// on a pool of 40) one thread gets one task's share of them and TPS falls
// by about a tenth. The signal for both is the Go scheduler's own: how
// long a runnable goroutine waits for a P (runtime/metrics
// /sched/latencies:seconds), with the process's CPU use.
//
// Run looks every Interval. On the default Ps it goes to one after
// DownAfter windows in a row below DownCPU cores and with the 90th
// percentile of that wait below DownLatency; on one P it goes back to the
// default (runtime.SetDefaultGOMAXPROCS, which also follows cgroup
// limits again) after one window above UpCPU or UpLatency. The window
// after a change is not judged: it mixes both settings. decide is the
// rule, a pure function.
//
// It does nothing when the GOMAXPROCS environment variable is set (the
// operator chose) or the default is one P already. It owns one goroutine,
// Run's caller's; it changes nothing but GOMAXPROCS.
package procs
