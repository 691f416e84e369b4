// Package procs runs pg_doorman on one P (GOMAXPROCS=1) while one is
// enough, and on the runtime's default number of Ps once it is not.
//
// Why: with two Ps and a light load, most of a transaction's wake-ups go
// from one thread to the other (a goroutine readied on one P, the idle
// other P's thread woken through a futex to run it), and the receivers a
// write wakes preempt a thread more often. On the 2-CPU bench machine a
// single P spends 10–20 % less CPU per transaction at 10 and 40 clients
// select-only and 15–17 % less with tpcb-like at 100 and 400 clients, with
// as much TPS or more (docs/benchmarks-passes.md, fourteenth and fifteenth
// passes). Under load one P loses: when the machine's CPUs are contended
// by short transactions (PostgreSQL on the same host, select-only at 100
// clients on a pool of 40) one thread gets one task's share of them and
// TPS falls by about a tenth. The signal that tells these apart is the Go
// scheduler's own: how long a runnable goroutine waits for a P
// (runtime/metrics /sched/latencies:seconds), with the process's CPU use.
// Its 90th percentile on two Ps was 0.45–0.8 ms where one P is as good
// and 1.6–2.1 ms where it is not. Those figures are the goroutine path's;
// the transaction core runs those loads on one P with less CPU, as long
// as its busy loop lets the netpoller run (internal/rawio's PolledEpoll,
// once a millisecond): before it did, goroutines behind it waited up to
// 10 ms and the rule moved to two Ps for nothing (docs/benchmarks-passes.md,
// thirty-first pass).
//
// Run looks every Interval. On the default Ps it goes to one after
// DownAfter windows in a row below DownCPU cores and with the 90th
// percentile of that wait below DownLatency; on one P it goes back to the
// default (runtime.SetDefaultGOMAXPROCS, which also follows cgroup
// limits again) after one window above UpCPU or UpLatency. A load that
// goes back up within Settle windows of a move down made under load (at
// least IdleCPU) doubles the quiet windows its next move down needs (up
// to MaxDownAfter), so one on the edge does not flip every few seconds;
// an idle process that meets a burst goes up without doubling anything.
// A window's wait counts only when it saw at least MinWaits of them: the
// few of an idle process (a metrics scrape, a garbage collection) say
// nothing about a load. The window after a change is not judged: it mixes
// both settings. decide is the rule, a pure function of the window and
// the rule's state.
//
// It does nothing when the GOMAXPROCS environment variable is set (the
// operator chose) or the default is one P already. It owns one goroutine,
// Run's caller's; it changes nothing but GOMAXPROCS.
package procs
