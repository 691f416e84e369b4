package proxy

import (
	"time"

	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/proxyconfig"
)

// Reason says why a port refuses new connections or why a connection was
// cut. Values are metric label values.
type Reason string

// Reasons.
const (
	ReasonNone             Reason = ""
	ReasonNoTopology       Reason = "no_topology"        // no successful /cluster fetch yet
	ReasonStaleTopology    Reason = "stale_topology"     // last fetch older than max_topology_age
	ReasonNoLeader         Reason = "no_leader"          // write port: no serving leader
	ReasonMultipleLeaders  Reason = "multiple_leaders"   // write port: more than one leader
	ReasonLeaderInRecovery Reason = "leader_in_recovery" // write port: the leader's own API has not confirmed promotion
	ReasonNoBackends       Reason = "no_backends"        // nothing eligible
	ReasonConnectFailed    Reason = "connect_failed"     // every eligible backend failed to connect
	ReasonShutdown         Reason = "shutdown"

	ReasonMemberGone  Reason = "member_gone"  // not in /cluster any more
	ReasonRoleLost    Reason = "role_lost"    // role no longer served by the port
	ReasonNotServing  Reason = "not_serving"  // left running/streaming
	ReasonLagExceeded Reason = "lag_exceeded" // over max_lag_in_bytes
	ReasonAddrClash   Reason = "addr_clash"   // two members map to one host:port
	ReasonPortRemoved Reason = "port_removed" // port removed or changed by reload
)

// PortSpec is what routing needs to know of one configured port.
type PortSpec struct {
	Cluster, Name string
	Listen        string
	Roles         []proxyconfig.Role
	HostPort      int   // 0: the member's own port
	MaxLag        int64 // 0: no limit
	HoldTimeout   time.Duration
}

// SpecFromConfig builds the PortSpec of port name of cluster.
func SpecFromConfig(cluster, name string, p proxyconfig.Port) PortSpec {
	return PortSpec{
		Cluster: cluster, Name: name, Listen: p.Listen,
		Roles: slices.Clone(p.Roles), HostPort: p.HostPort, MaxLag: p.MaxLagInBytes, HoldTimeout: p.HoldTimeout,
	}
}

// WritePort reports whether the port serves the leader by name, which puts
// it under the exactly-one-primary rule.
func (s PortSpec) WritePort() bool { return slices.Contains(s.Roles, proxyconfig.RoleLeader) }

// serves reports whether a member with Patroni role r belongs to the port.
func (s PortSpec) serves(r patroni.Role) bool {
	for _, x := range s.Roles {
		switch {
		case x == proxyconfig.RoleAny && (r == patroni.RoleLeader || r.IsReplica() || r == patroni.RoleStandbyLeader),
			x == proxyconfig.RoleLeader && r == patroni.RoleLeader,
			x == proxyconfig.RoleSync && r.IsSync(),
			x == proxyconfig.RoleAsync && r == patroni.RoleReplica:
			return true
		}
	}
	return false
}

// Addr is the host:port to dial for m, or "" when m has no usable address.
func (s PortSpec) Addr(m patroni.Member) string {
	if s.HostPort == 0 {
		return m.Addr()
	}
	if m.Host == "" {
		return ""
	}
	return net.JoinHostPort(m.Host, strconv.Itoa(s.HostPort))
}

// Target is a backend new connections may go to.
type Target struct {
	Addr   string // host:port, the key of connection tracking
	Member string
	Role   patroni.Role
}

// Plan is the routing decision for one port and one topology.
type Plan struct {
	// Refuse is set when the port must refuse every new connection.
	Refuse Reason
	// Eligible are the backends for new connections, sorted by Addr.
	Eligible []Target
	// Keep holds the addresses whose existing connections stay open. It
	// does not depend on the leader count or on noloadbalance: only a
	// backend's own loss of role, state or lag (or its disappearance) cuts.
	Keep map[string]bool
	// Drop says why a listed member's address is not kept; an address in
	// neither Keep nor Drop belongs to a member that is gone.
	Drop map[string]Reason
}

// CutReason is the reason to close connections to addr under p.
func (p Plan) CutReason(addr string) Reason {
	if r, ok := p.Drop[addr]; ok {
		return r
	}
	return ReasonMemberGone
}

// NewPlan decides routing for spec under cluster c. It is a pure function.
//
// A member is kept when it serves (State.Serving), has a role the port
// serves, and (for non-leaders with a max_lag) a known lag within the limit
// is not exceeded. It is eligible for new connections when kept, not tagged
// noloadbalance and its lag is known when a limit is set. A write port (roles
// include leader) refuses new connections unless exactly one leader exists
// and it serves; an "any" port then simply leaves the leader out. A write
// port also refuses while leaderPromoted is false: /cluster names a member
// leader as soon as it holds the leader key, before its postgres leaves
// recovery, and only the member's own /patroni tells (see cluster.confirm).
func NewPlan(c *patroni.Cluster, spec PortSpec, leaderPromoted bool) Plan {
	p := Plan{Keep: map[string]bool{}, Drop: map[string]Reason{}}
	if c == nil {
		p.Refuse = ReasonNoTopology
		return p
	}
	leaders := c.Leaders()
	oneLeader := len(leaders) == 1 && leaders[0].Serving()
	byAddr := map[string]int{}
	for _, m := range c.Members {
		if a := spec.Addr(m); a != "" {
			byAddr[a]++
		}
	}
	for _, m := range c.Members {
		addr := spec.Addr(m)
		if addr == "" {
			continue
		}
		reason, eligible := judge(m, spec, byAddr[addr] > 1)
		if reason != ReasonNone {
			if !p.Keep[addr] {
				p.Drop[addr] = reason
			}
			continue
		}
		delete(p.Drop, addr)
		p.Keep[addr] = true
		if eligible && (m.Role != patroni.RoleLeader || oneLeader) {
			p.Eligible = append(p.Eligible, Target{Addr: addr, Member: m.Name, Role: m.Role})
		}
	}
	slices.SortFunc(p.Eligible, func(a, b Target) int { return strings.Compare(a.Addr, b.Addr) })
	switch {
	case spec.WritePort() && len(leaders) > 1:
		p.Refuse = ReasonMultipleLeaders
	case spec.WritePort() && !oneLeader:
		p.Refuse = ReasonNoLeader
	case spec.WritePort() && !leaderPromoted:
		p.Refuse = ReasonLeaderInRecovery
	case len(p.Eligible) == 0:
		p.Refuse = ReasonNoBackends
	}
	return p
}

// judge returns why m's connections must be cut (ReasonNone to keep them)
// and whether m may take new ones.
func judge(m patroni.Member, spec PortSpec, clash bool) (Reason, bool) {
	switch {
	case clash:
		return ReasonAddrClash, false
	case !spec.serves(m.Role):
		return ReasonRoleLost, false
	case !m.Serving():
		return ReasonNotServing, false
	}
	if m.Role == patroni.RoleLeader || spec.MaxLag <= 0 {
		return ReasonNone, !m.Tags.NoLoadBalance
	}
	if m.LagKnown && m.Lag > spec.MaxLag {
		return ReasonLagExceeded, false
	}
	return ReasonNone, m.LagKnown && !m.Tags.NoLoadBalance
}
