package proxyconfig

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// fileConfig mirrors the YAML keys; pointers tell "absent" from zero.
type fileConfig struct {
	ClusterUpdateInterval *Duration              `yaml:"cluster_update_interval"`
	ListenAddress         *string                `yaml:"listen_address"`
	ConnectTimeout        *Duration              `yaml:"connect_timeout"`
	PatroniTimeout        *Duration              `yaml:"patroni_timeout"`
	MaxTopologyAge        *Duration              `yaml:"max_topology_age"`
	ShutdownTimeout       *Duration              `yaml:"shutdown_timeout"`
	Clusters              map[string]fileCluster `yaml:"clusters"`
}

type fileCluster struct {
	Hosts []string            `yaml:"hosts"`
	TLS   *fileTLS            `yaml:"tls"`
	Ports map[string]filePort `yaml:"ports"`
}

type fileTLS struct {
	CACert     string `yaml:"ca_cert"`
	ClientCert string `yaml:"client_cert"`
	ClientKey  string `yaml:"client_key"`
	SkipVerify bool   `yaml:"skip_verify"`
}

type filePort struct {
	Listen        string   `yaml:"listen"`
	Roles         []string `yaml:"roles"`
	HostPort      int      `yaml:"host_port"`
	MaxLagInBytes int64    `yaml:"max_lag_in_bytes"`
	HoldTimeout   Duration `yaml:"hold_timeout"`
}

// Duration reads a number of seconds (3, 0.5) or a Go duration ("500ms").
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want seconds or a duration", n.Line)
	}
	if n.Tag == "!!int" || n.Tag == "!!float" {
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e9 {
			return fmt.Errorf("line %d: bad number of seconds %q", n.Line, n.Value)
		}
		*d = Duration(f * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: want seconds or a duration such as 500ms, got %q", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

func durOr(d *Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}

// build applies defaults. Validation happens afterwards on the result.
func (f *fileConfig) build() *Config {
	cfg := &Config{
		ClusterUpdateInterval: durOr(f.ClusterUpdateInterval, DefaultClusterUpdateInterval),
		ListenAddress:         DefaultListenAddress,
		ConnectTimeout:        durOr(f.ConnectTimeout, DefaultConnectTimeout),
		PatroniTimeout:        durOr(f.PatroniTimeout, DefaultPatroniTimeout),
		ShutdownTimeout:       durOr(f.ShutdownTimeout, DefaultShutdownTimeout),
		Clusters:              make(map[string]Cluster, len(f.Clusters)),
	}
	if f.ListenAddress != nil {
		cfg.ListenAddress = *f.ListenAddress
	}
	cfg.MaxTopologyAge = durOr(f.MaxTopologyAge, max(MinMaxTopologyAge, 3*cfg.ClusterUpdateInterval))
	for name, fc := range f.Clusters {
		c := Cluster{Hosts: append([]string(nil), fc.Hosts...), Ports: make(map[string]Port, len(fc.Ports))}
		if fc.TLS != nil {
			c.TLS = &TLS{CACert: fc.TLS.CACert, ClientCert: fc.TLS.ClientCert, ClientKey: fc.TLS.ClientKey, SkipVerify: fc.TLS.SkipVerify}
		}
		for pname, fp := range fc.Ports {
			p := Port{Listen: fp.Listen, HostPort: fp.HostPort, MaxLagInBytes: fp.MaxLagInBytes, HoldTimeout: time.Duration(fp.HoldTimeout)}
			for _, r := range fp.Roles {
				p.Roles = append(p.Roles, Role(r))
			}
			c.Ports[pname] = p
		}
		cfg.Clusters[name] = c
	}
	return cfg
}

// Clone returns a deep copy (tests and reload build variants from it).
func (c *Config) Clone() *Config {
	out := *c
	out.Clusters = make(map[string]Cluster, len(c.Clusters))
	for name, cl := range c.Clusters {
		cc := Cluster{Hosts: append([]string(nil), cl.Hosts...), Ports: maps.Clone(cl.Ports)}
		if cl.TLS != nil {
			t := *cl.TLS
			cc.TLS = &t
		}
		for pn, p := range cc.Ports {
			p.Roles = append([]Role(nil), p.Roles...)
			cc.Ports[pn] = p
		}
		out.Clusters[name] = cc
	}
	return &out
}
