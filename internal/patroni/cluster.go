package patroni

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Cluster is a decoded GET /cluster answer.
type Cluster struct {
	// Scope is the cluster name; Patroni sends it only from 3.2 on ("" before).
	Scope   string
	Members []Member
	// Pause is true while the cluster is in maintenance mode (patronictl pause).
	Pause bool
	// ScheduledSwitchover is non-nil only while a switchover is scheduled.
	ScheduledSwitchover *ScheduledSwitchover
}

// ScheduledSwitchover describes a pending scheduled switchover.
type ScheduledSwitchover struct {
	At   string `json:"at"` // ISO-8601 as Patroni formats it
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

type clusterJSON struct {
	Scope               string               `json:"scope,omitempty"`
	Members             *[]Member            `json:"members"`
	Pause               bool                 `json:"pause,omitempty"`
	ScheduledSwitchover *ScheduledSwitchover `json:"scheduled_switchover,omitempty"`
}

// ErrNotCluster is returned by ParseCluster for a JSON document that is not a
// /cluster answer (no "members" array), e.g. a /patroni body.
var ErrNotCluster = errors.New("not a patroni /cluster answer: no members")

// ParseCluster decodes a /cluster body. Unknown fields are ignored; known
// fields of the wrong type, a missing "members" array, a member without a
// name or two members with the same name are errors. The caller bounds the
// size of body.
func ParseCluster(body []byte) (*Cluster, error) {
	var j clusterJSON
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, fmt.Errorf("parse cluster: %w", err)
	}
	if j.Members == nil {
		return nil, fmt.Errorf("parse cluster: %w", ErrNotCluster)
	}
	seen := make(map[string]struct{}, len(*j.Members))
	for i, m := range *j.Members {
		if m.Name == "" {
			return nil, fmt.Errorf("parse cluster: member %d has no name", i)
		}
		if _, dup := seen[m.Name]; dup {
			return nil, fmt.Errorf("parse cluster: duplicate member %q", m.Name)
		}
		seen[m.Name] = struct{}{}
	}
	return &Cluster{
		Scope:               j.Scope,
		Members:             *j.Members,
		Pause:               j.Pause,
		ScheduledSwitchover: j.ScheduledSwitchover,
	}, nil
}

// MarshalJSON writes the cluster in /cluster format.
func (c *Cluster) MarshalJSON() ([]byte, error) {
	members := c.Members
	if members == nil {
		members = []Member{}
	}
	return json.Marshal(clusterJSON{
		Scope: c.Scope, Members: &members, Pause: c.Pause,
		ScheduledSwitchover: c.ScheduledSwitchover,
	})
}

// Leaders returns the members whose role is leader, whatever their state.
// A standby_leader is deliberately not included: it heads a standby cluster
// and is read-only, so it must never receive write traffic. Usually there is
// one leader; zero is normal for a moment in every switchover and failover and
// for a long time in a paused cluster whose leader's postgres died. Callers
// routing writes must also require State.Serving() and treat connect errors as
// authoritative, because a lost leader stays "leader/running" until its TTL
// expires.
func (c *Cluster) Leaders() []Member { return c.WithRole(RoleLeader) }

// WithRole returns the members that have any of the given roles, in /cluster
// order (Patroni sorts by name).
func (c *Cluster) WithRole(roles ...Role) []Member {
	var out []Member
	for _, m := range c.Members {
		for _, r := range roles {
			if m.Role == r {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// Member returns the member with the given name.
func (c *Cluster) Member(name string) (Member, bool) {
	for _, m := range c.Members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}
