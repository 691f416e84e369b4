// Command patroni_proxy routes PostgreSQL client connections to the members
// of Patroni clusters by role (leader, sync, async, any), next to the
// applications.
//
// Config: the YAML file named by the only argument (see
// deploy/patroni_proxy/patroni_proxy.yaml and package proxyconfig).
// Signals: SIGHUP reloads the file (ports added, removed or changed, Patroni
// hosts changed; connections on unchanged ports are not touched); SIGTERM and
// SIGINT stop accepting, wait up to shutdown_timeout for connections to end
// and then close them; a second signal exits at once. Endpoints on
// listen_address: / and /health (liveness), /ready, /update_clusters,
// /status, /metrics. systemd: READY=1 after every listener is bound,
// RELOADING=1 around reloads, STOPPING=1 on shutdown. Exit codes: 0 after a
// clean shutdown or a valid config with -t, 1 on a config or startup error or
// a forced exit.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], nil)) }
