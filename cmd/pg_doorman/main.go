// Command pg_doorman is a multi-threaded PostgreSQL connection pooler.
//
// Config: the file named by the first argument, else $CONFIG_FILE, else
// pg_doorman.toml in the working directory (YAML or TOML by extension).
// Signals: SIGHUP reloads, SIGTERM (and SIGINT on a terminal) shut down
// gracefully within shutdown_timeout, SIGUSR2 (and SIGINT under -d or off a
// terminal) runs a binary upgrade. Subcommand: generate. Endpoints: general.host:port and the unix socket for
// clients (database pgdoorman or pgbouncer is the admin console),
// prometheus.host:port/metrics when enabled. Exit codes: 0 after a clean
// shutdown or a valid config with -t, 1 on a config or startup error.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}
