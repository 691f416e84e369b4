// Command pgrole_check tells HAProxy (or a script) whether a PostgreSQL server
// or a pg_doorman in front of it has the wanted role.
//
//	pgrole_check check --role primary|replica|any --method hot_standby|recovery \
//	    --host H --port P --user U --database D [--password-file F] [--timeout 2s] \
//	    [--max-lag 16MB] [proxy_addr proxy_port server_addr server_port]
//	pgrole_check serve --listen 127.0.0.1:8010 [connection flags]
//	pgrole_check haproxy-config [flags]
//	pgrole_check drill --dsn DSN [--workers 6] [--duration 24s] [--json F]
//
// check: HAProxy's external-check arguments (or HAPROXY_SERVER_ADDR/PORT)
// name the server; the password comes from --password-file, --password or
// PGPASSWORD and is never printed. Exit codes: 0 the role matches, 1 it does
// not, 2 error (unreachable, timeout, authentication, bad flags), with a
// one-line reason on stderr.
//
// serve: HTTP endpoints shaped like Patroni's (/primary, /replica,
// /read-only, /health, ?lag=) answered from direct checks cached for
// --cache-interval, /metrics, /liveness. SIGINT/SIGTERM stop it gracefully.
// Exit codes: 0 after a clean stop, 2 on a startup error.
//
// haproxy-config: prints an HAProxy configuration (tcp-check with the startup
// packet in hex, httpchk against serve, or external-check) with the
// nbsrv(...) eq 1 guard on the write port; --print-wrapper prints the
// external-check wrapper script instead.
//
// drill: writes through --dsn with fresh connections while an operator
// rehearses a failover, then reconciles against the primary
// (internal/drill, docs/failover.md). Exit codes: 0 no violation, 1
// acknowledged writes missing, duplicates or unreconciled outcomes, 2 error.
package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	code := 0
	root := &cobra.Command{
		Use:           "pgrole_check",
		Short:         "PostgreSQL role checks HAProxy can trust",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(checkCommand(&code), serveCommand(&code), haproxyConfigCommand(&code), drillCommand(&code))
	if err := root.Execute(); err != nil {
		os.Stderr.WriteString("pgrole_check: " + err.Error() + "\n")
		os.Exit(2)
	}
	os.Exit(code)
}
