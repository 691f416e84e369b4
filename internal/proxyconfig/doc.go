// Package proxyconfig loads the YAML configuration of patroni_proxy.
//
// Load and Parse decode strictly (an unknown key is an error), fill in
// defaults, then validate, collecting every problem with its key path
// through errors.Join. The result is a read-only value: reload builds a new
// Config and swaps it in, it never edits the old one.
//
// The keys of the seed's patroni_proxy.yaml are kept as they are
// (cluster_update_interval, listen_address, clusters.<name>.hosts, tls,
// ports.<name>.listen, roles, host_port, max_lag_in_bytes). host_port may be
// left out: the member's own port from /cluster is then dialled. Our
// additions, all optional: connect_timeout, patroni_timeout,
// max_topology_age (how long the last known topology is trusted when every
// Patroni URL fails; new connections are refused after that),
// shutdown_timeout and per port hold_timeout (how long a connection the
// port cannot route yet waits for the next topology before it is refused). Durations are a number of seconds or a Go duration
// string ("500ms"). Cluster and port names are map keys and keep their case.
//
// The package does not open files named in tls, bind sockets or talk to
// Patroni; the proxy does that when it applies the config.
package proxyconfig
