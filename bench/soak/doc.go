// Package soak runs the pg_doorman soak test behind `make soak`: hundreds of
// pgx clients in this process drive a mixed workload through one pg_doorman
// for a long time while the test samples the pooler's memory and
// goroutines, and judges whether anything failed or grew.
//
// Run is the whole test. It starts a throwaway PostgreSQL and pg_doorman
// (transaction mode, Prometheus exporter on) through bench/harness, then
// runs Settings.Clients workers (worker.go). Each worker owns one pgx
// connection and loops until the deadline: it picks a Kind by weight
// (mix.go), runs it (work.go) and counts the outcome in the shared Counters
// (counters.go, atomics and one mutex for error texts). Some kinds kill the
// worker's own connection abruptly (close, or RST via SetLinger(0)) while
// idle, mid-transaction or mid-result; errors those kills cause on the
// killed connection are "expected", every other error is "unexpected".
//
// One sampler goroutine (sample.go) reads VmRSS and VmHWM from /proc, the
// open descriptors, and go_goroutines and go_memstats_heap_inuse_bytes
// from the exporter at every interval. Judge (verdict.go) is a pure
// function of the samples; Render (render.go) writes the Markdown table.
//
// Settings come from SOAK_* environment variables (settings.go). The
// package is not safe for concurrent use: one Run per process, since it
// raises the open-file limit. Everything listens on 127.0.0.1 only.
package soak
