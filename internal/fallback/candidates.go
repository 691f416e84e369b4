package fallback

import (
	"strings"

	"github.com/doorman-go/doorman/internal/patroni"
)

// Candidate is one member a fallback round may start a connection to.
type Candidate struct {
	Name   string
	Role   patroni.Role
	Target Target
}

// Eligible reports whether a member may be a fallback candidate at all:
// postgres serving (running, streaming, in archive recovery), a host and
// port to dial, and none of the tags noloadbalance, nofailover, archive.
func Eligible(m patroni.Member) bool {
	if !m.Serving() || m.Addr() == "" {
		return false
	}
	return !m.Tags.NoLoadBalance && !m.Tags.NoFailover && !tagTrue(m.Tags.Raw["archive"])
}

// Waves splits the eligible members of cl into wave 1 (sync standbys, quorum
// standbys included) and wave 2 (everyone else: replica, leader,
// standby_leader, in /cluster order), leaving out members for which skip
// returns true (the per-host cooldown). skip may be nil.
func Waves(cl *patroni.Cluster, skip func(addr string) bool) (wave1, wave2 []Candidate) {
	for _, m := range cl.Members {
		if !Eligible(m) || (skip != nil && skip(m.Addr())) {
			continue
		}
		c := Candidate{Name: m.Name, Role: m.Role, Target: Target{Network: "tcp", Address: m.Addr()}}
		if m.Role.IsSync() {
			wave1 = append(wave1, c)
		} else {
			wave2 = append(wave2, c)
		}
	}
	return wave1, wave2
}

// tagTrue reads a Patroni tag value as Patroni does: YAML booleans, strings
// and numbers are all accepted.
func tagTrue(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "on", "yes", "1", "y":
			return true
		}
	case float64:
		return x != 0
	}
	return false
}
