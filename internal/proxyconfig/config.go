package proxyconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults of the optional keys.
const (
	DefaultClusterUpdateInterval = 3 * time.Second
	DefaultListenAddress         = "127.0.0.1:8009"
	DefaultConnectTimeout        = 3 * time.Second
	DefaultPatroniTimeout        = 2 * time.Second
	DefaultShutdownTimeout       = 10 * time.Second
	// MinMaxTopologyAge is the default (and floor of the default) for
	// max_topology_age: Patroni's default ttl, after which a leader that
	// cannot renew its key demotes itself. The default is the larger of this
	// and three update intervals.
	MinMaxTopologyAge = 30 * time.Second
)

// Role is a port role as written in the config.
type Role string

// The roles a port may serve.
const (
	RoleLeader Role = "leader" // the primary
	RoleSync   Role = "sync"   // sync_standby and quorum_standby
	RoleAsync  Role = "async"  // replica (asynchronous standby)
	RoleAny    Role = "any"    // every serving member, the leader only while it is the only one
)

// Config is the whole file. Treat it as read-only once loaded.
type Config struct {
	ClusterUpdateInterval time.Duration
	ListenAddress         string
	ConnectTimeout        time.Duration
	PatroniTimeout        time.Duration
	MaxTopologyAge        time.Duration
	ShutdownTimeout       time.Duration
	Clusters              map[string]Cluster
}

// Cluster is one Patroni cluster and the ports that route to it.
type Cluster struct {
	Hosts []string
	TLS   *TLS // nil when absent
	Ports map[string]Port
}

// TLS configures HTTPS towards the Patroni REST API.
type TLS struct {
	CACert     string
	ClientCert string
	ClientKey  string
	SkipVerify bool
}

// Port is one listening address and the members it routes to.
type Port struct {
	Listen string
	Roles  []Role
	// HostPort is the PostgreSQL port dialled on the member's host; 0 means
	// the member's own port from /cluster.
	HostPort int
	// MaxLagInBytes excludes (and disconnects) replicas lagging more; 0
	// means no limit.
	MaxLagInBytes int64
	// HoldTimeout is how long a new connection the port cannot route yet
	// (no confirmed leader, no eligible backend, stale topology) is held
	// open, waiting for the next topology, before it is refused; 0 refuses
	// at once. Nothing is forwarded until a backend is eligible.
	HoldTimeout time.Duration
}

// HasRole reports whether p lists r.
func (p Port) HasRole(r Role) bool {
	for _, x := range p.Roles {
		if x == r {
			return true
		}
	}
	return false
}

// Load reads and parses the file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	cfg, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes, defaults and validates a YAML document.
func Parse(b []byte) (*Config, error) {
	var f fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("parse config: empty document")
		}
		return nil, fmt.Errorf("parse config: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("parse config: more than one YAML document")
	}
	cfg := f.build()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}
