// Package bdd holds the end-to-end scenarios of pg_doorman, written in
// Gherkin (features/*.feature) for operators and run by godog under
// `go test`.
//
// TestMain builds cmd/pg_doorman once into a temporary directory (or uses
// $DOORMAN_BIN). The first scenario that needs PostgreSQL starts one
// server from internal/pgtest for the whole run; each scenario creates its
// own databases on it and drops them when it ends. Every scenario gets a
// directory of its own and a real pg_doorman process on a free 127.0.0.1
// port, killed when the scenario ends, pass or fail. Nothing talks to
// anything but 127.0.0.1 and unix sockets.
//
// The steps live in *_test.go files: scenario holds the state of one
// scenario, scenariot the testing.TB the pgtest harness gets inside a
// step, process and doormancfg the pg_doorman process and its YAML, and
// one steps_* file per feature area. Scenarios run one at a time: they
// send signals to processes and count PostgreSQL connections.
//
// Run with: cd bdd && go test ./... (the module is part of the repository's
// go.work, so it builds against the working tree). A single scenario:
// go test -run 'TestFeatures/Reload_on_SIGHUP' ./... ; by tag:
// GODOG_TAGS=@signals go test ./... (scenarios tagged @wip are left out
// by default: they describe behaviour that is not there yet).
//
// See https://github.com/cucumber/godog and
// https://www.postgresql.org/docs/15/errcodes-appendix.html.
package bdd
