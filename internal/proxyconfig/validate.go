package proxyconfig

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/doorman-go/doorman/internal/patroni"
)

// validate checks every key and returns all problems at once, each prefixed
// with its key path, in a stable (sorted) order.
func (c *Config) validate() error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	positive := func(path string, d time.Duration) {
		if d <= 0 {
			add(path, "must be positive, got %s", d)
		}
	}
	positive("cluster_update_interval", c.ClusterUpdateInterval)
	positive("connect_timeout", c.ConnectTimeout)
	positive("patroni_timeout", c.PatroniTimeout)
	positive("shutdown_timeout", c.ShutdownTimeout)
	if c.MaxTopologyAge < c.ClusterUpdateInterval {
		add("max_topology_age", "must be at least cluster_update_interval (%s), got %s", c.ClusterUpdateInterval, c.MaxTopologyAge)
	}
	if err := checkListen(c.ListenAddress); err != nil {
		add("listen_address", "%v", err)
	}
	if len(c.Clusters) == 0 {
		add("clusters", "at least one cluster is required")
	}
	listens := map[string]string{c.ListenAddress: "listen_address"}
	for _, name := range slices.Sorted(maps.Keys(c.Clusters)) {
		errs = append(errs, validateCluster("clusters."+name, c.Clusters[name], listens)...)
	}
	return errors.Join(errs...)
}

func validateCluster(path string, c Cluster, listens map[string]string) []error {
	var errs []error
	add := func(p, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", p, fmt.Sprintf(format, args...)))
	}
	if len(c.Hosts) == 0 {
		add(path+".hosts", "at least one Patroni API URL is required")
	}
	seen := map[string]bool{}
	for i, h := range c.Hosts {
		u, err := patroni.NormalizeURL(h)
		switch {
		case err != nil:
			add(fmt.Sprintf("%s.hosts[%d]", path, i), "%v", err)
		case seen[u]:
			add(fmt.Sprintf("%s.hosts[%d]", path, i), "duplicate URL %s", u)
		}
		seen[u] = true
	}
	if t := c.TLS; t != nil && (t.ClientCert == "") != (t.ClientKey == "") {
		add(path+".tls", "client_cert and client_key must be given together")
	}
	if len(c.Ports) == 0 {
		add(path+".ports", "at least one port is required")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Ports)) {
		p := c.Ports[name]
		pp := path + ".ports." + name
		for _, err := range validatePort(p) {
			errs = append(errs, fmt.Errorf("%s.%w", pp, err))
		}
		if p.Listen == "" {
			continue
		}
		if other, dup := listens[p.Listen]; dup {
			add(pp+".listen", "address %s is also used by %s", p.Listen, other)
			continue
		}
		listens[p.Listen] = pp + ".listen"
	}
	return errs
}

// validatePort returns errors whose text starts with the key name, so the
// caller can prefix the port's path.
func validatePort(p Port) []error {
	var errs []error
	if err := checkListen(p.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %w", err))
	}
	if len(p.Roles) == 0 {
		errs = append(errs, errors.New("roles: at least one of leader, sync, async, any is required"))
	}
	seen := map[Role]bool{}
	for i, r := range p.Roles {
		switch {
		case r != RoleLeader && r != RoleSync && r != RoleAsync && r != RoleAny:
			errs = append(errs, fmt.Errorf("roles[%d]: unknown role %q (want leader, sync, async or any)", i, r))
		case seen[r]:
			errs = append(errs, fmt.Errorf("roles[%d]: duplicate role %q", i, r))
		}
		seen[r] = true
	}
	if p.HostPort < 0 || p.HostPort > 65535 {
		errs = append(errs, fmt.Errorf("host_port: %d is not a TCP port (leave it out to use the member's port)", p.HostPort))
	}
	if p.MaxLagInBytes < 0 {
		errs = append(errs, fmt.Errorf("max_lag_in_bytes: must not be negative, got %d", p.MaxLagInBytes))
	}
	if p.HoldTimeout < 0 || p.HoldTimeout > MaxHoldTimeout {
		errs = append(errs, fmt.Errorf("hold_timeout: must be between 0 and %s, got %s", MaxHoldTimeout, p.HoldTimeout))
	}
	return errs
}

// checkListen accepts host:port with a numeric port (host may be empty).
func checkListen(addr string) error {
	if addr == "" {
		return errors.New("required")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// MaxHoldTimeout bounds hold_timeout: a held connection is a socket and a
// goroutine, so the time bounds how many pile up (rate x time).
const MaxHoldTimeout = 30 * time.Second
