package patroni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Role is a member's role as /cluster reports it. Unknown roles are kept
// verbatim so that a newer Patroni does not make the answer unparseable.
type Role string

// Roles reported by Patroni's /cluster endpoint.
const (
	RoleLeader        Role = "leader"
	RoleReplica       Role = "replica"
	RoleSyncStandby   Role = "sync_standby"
	RoleQuorumStandby Role = "quorum_standby" // Patroni 4 quorum commit mode
	RoleStandbyLeader Role = "standby_leader" // leader of a standby cluster: not writable
)

// normalizeRole maps the legacy/primary spellings to RoleLeader. Patroni's
// /patroni endpoint says "master" (3.0) or "primary" (4.x); /cluster says
// "leader", but we accept all three so callers need not care.
func normalizeRole(s string) Role {
	switch s {
	case "master", "primary":
		return RoleLeader
	default:
		return Role(s)
	}
}

// IsSync reports whether the role is a synchronous standby (sync or quorum).
func (r Role) IsSync() bool { return r == RoleSyncStandby || r == RoleQuorumStandby }

// IsReplica reports whether the role is a (sync, quorum or async) standby of
// the leader. A standby_leader is not a replica of this cluster's leader.
func (r Role) IsReplica() bool { return r == RoleReplica || r.IsSync() }

// State is the raw PostgreSQL state string of a member ("running",
// "streaming", "starting", "stopped", "crashed", "stopping", ...).
type State string

// States that Patroni reports.
const (
	StateRunning           State = "running"
	StateStreaming         State = "streaming"           // healthy replica, Patroni >= 3.0.4
	StateInArchiveRecovery State = "in archive recovery" // replica fed from the archive, Patroni >= 3.0.4
	StateStarting          State = "starting"
	StateStopping          State = "stopping"
	StateStopped           State = "stopped"
	StateCrashed           State = "crashed"
	StateRestarting        State = "restarting"
	StateStartFailed       State = "start failed"
	StateCreatingReplica   State = "creating replica"
)

// Serving reports whether postgres on the member accepts queries: "running",
// or for replicas of Patroni >= 3.0.4 "streaming" / "in archive recovery".
// It says nothing about liveness: a lost leader stays "running" until its
// member key expires (see the package documentation).
func (s State) Serving() bool {
	return s == StateRunning || s == StateStreaming || s == StateInArchiveRecovery
}

// Tags holds the Patroni tags of a member. Raw keeps every tag as decoded.
type Tags struct {
	NoFailover    bool
	NoLoadBalance bool
	CloneFrom     bool
	NoSync        bool
	NoStream      bool
	ReplicateFrom string
	Raw           map[string]any
}

func parseTags(raw map[string]any) Tags {
	if len(raw) == 0 {
		return Tags{}
	}
	t := Tags{Raw: raw}
	t.NoFailover = tagBool(raw["nofailover"])
	t.NoLoadBalance = tagBool(raw["noloadbalance"])
	t.CloneFrom = tagBool(raw["clonefrom"])
	t.NoSync = tagBool(raw["nosync"])
	t.NoStream = tagBool(raw["nostream"])
	if s, ok := raw["replicatefrom"].(string); ok {
		t.ReplicateFrom = s
	}
	return t
}

// tagBool follows Patroni's lenient reading of boolean tags: YAML may carry
// them as booleans, strings or numbers.
func tagBool(v any) bool {
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

// Member is one entry of /cluster "members".
type Member struct {
	Name   string
	Role   Role
	State  State
	Host   string
	Port   int
	APIURL string
	// Timeline is 0 when Patroni omits it (postgres down, starting or demoting;
	// also ~1-2 s on the leader at the start of a switchover).
	Timeline int
	// Lag is the bytes between the leader's last published LSN and
	// max(received, replayed) of this member. LagKnown is false when Patroni
	// says "unknown" (no WAL position) or omits it on a non-leader. The leader
	// (and a standby_leader) carries no lag: 0, known.
	Lag      int64
	LagKnown bool
	// Patroni >= 3.2 only; "Known" is false when absent or "unknown".
	ReceiveLag      int64
	ReceiveLagKnown bool
	ReplayLag       int64
	ReplayLagKnown  bool
	// LSN, ReceiveLSN, ReplayLSN are kept as Patroni formats them ("0/3000060").
	LSN, ReceiveLSN, ReplayLSN string
	PendingRestart             bool
	Tags                       Tags
}

// Addr returns host:port for dialing postgres, or "" when Patroni did not
// report a host or port (an empty host would silently mean localhost).
func (m Member) Addr() string {
	if m.Host == "" || m.Port <= 0 {
		return ""
	}
	return net.JoinHostPort(m.Host, strconv.Itoa(m.Port))
}

// Serving is shorthand for m.State.Serving().
func (m Member) Serving() bool { return m.State.Serving() }

type memberJSON struct {
	Name           string          `json:"name"`
	Role           string          `json:"role"`
	State          string          `json:"state"`
	APIURL         string          `json:"api_url"`
	Host           string          `json:"host"`
	Port           json.RawMessage `json:"port"`
	Timeline       json.RawMessage `json:"timeline"`
	Lag            json.RawMessage `json:"lag"`
	ReceiveLag     json.RawMessage `json:"receive_lag"`
	ReplayLag      json.RawMessage `json:"replay_lag"`
	LSN            json.RawMessage `json:"lsn"`
	ReceiveLSN     json.RawMessage `json:"receive_lsn"`
	ReplayLSN      json.RawMessage `json:"replay_lsn"`
	PendingRestart bool            `json:"pending_restart"`
	Tags           map[string]any  `json:"tags"`
}

// UnmarshalJSON decodes one /cluster member. Unknown fields are ignored; the
// known ones must have the types Patroni gives them.
func (m *Member) UnmarshalJSON(b []byte) error {
	var j memberJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	out := Member{
		Name: j.Name, Role: normalizeRole(j.Role), State: State(j.State),
		Host: j.Host, APIURL: j.APIURL, PendingRestart: j.PendingRestart,
		Tags: parseTags(j.Tags),
	}
	var err error
	if out.Port, err = jsonInt(j.Port, true); err != nil {
		return fmt.Errorf("member %q: port: %w", j.Name, err)
	}
	if out.Timeline, err = jsonInt(j.Timeline, false); err != nil {
		return fmt.Errorf("member %q: timeline: %w", j.Name, err)
	}
	if out.Lag, out.LagKnown, err = jsonLag(j.Lag); err != nil {
		return fmt.Errorf("member %q: lag: %w", j.Name, err)
	}
	if isNull(j.Lag) && (out.Role == RoleLeader || out.Role == RoleStandbyLeader) {
		out.LagKnown = true
	}
	if out.ReceiveLag, out.ReceiveLagKnown, err = jsonLag(j.ReceiveLag); err != nil {
		return fmt.Errorf("member %q: receive_lag: %w", j.Name, err)
	}
	if out.ReplayLag, out.ReplayLagKnown, err = jsonLag(j.ReplayLag); err != nil {
		return fmt.Errorf("member %q: replay_lag: %w", j.Name, err)
	}
	out.LSN, out.ReceiveLSN, out.ReplayLSN = jsonText(j.LSN), jsonText(j.ReceiveLSN), jsonText(j.ReplayLSN)
	*m = out
	return nil
}

// MarshalJSON writes the member in /cluster format (used by test fakes and to
// re-publish a topology). A non-leader with an unknown lag gets "unknown".
func (m Member) MarshalJSON() ([]byte, error) {
	o := map[string]any{"name": m.Name, "role": string(m.Role), "state": string(m.State)}
	setIf := func(k string, v any, ok bool) {
		if ok {
			o[k] = v
		}
	}
	setIf("api_url", m.APIURL, m.APIURL != "")
	setIf("host", m.Host, m.Host != "")
	setIf("port", m.Port, m.Port != 0)
	setIf("timeline", m.Timeline, m.Timeline != 0)
	setIf("pending_restart", true, m.PendingRestart)
	setIf("tags", m.Tags.Raw, len(m.Tags.Raw) > 0)
	setIf("lsn", m.LSN, m.LSN != "")
	setIf("receive_lsn", m.ReceiveLSN, m.ReceiveLSN != "")
	setIf("replay_lsn", m.ReplayLSN, m.ReplayLSN != "")
	setIf("receive_lag", m.ReceiveLag, m.ReceiveLagKnown)
	setIf("replay_lag", m.ReplayLag, m.ReplayLagKnown)
	leader := m.Role == RoleLeader || m.Role == RoleStandbyLeader
	switch {
	case m.LagKnown && !(leader && m.Lag == 0):
		o["lag"] = m.Lag
	case !m.LagKnown:
		o["lag"] = "unknown"
	}
	return json.Marshal(o)
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// jsonInt reads an integer; a numeric string is accepted when allowString
// (ports come from connect_address and may be quoted by older versions).
func jsonInt(raw json.RawMessage, allowString bool) (int, error) {
	if isNull(raw) {
		return 0, nil
	}
	text := string(raw)
	if raw[0] == '"' {
		if !allowString {
			return 0, fmt.Errorf("want a number, got %s", text)
		}
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, err
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		return 0, fmt.Errorf("want an integer, got %.40s", string(raw))
	}
	return n, nil
}

// jsonLag reads a lag: an integer number of bytes (known) or a string such
// as "unknown" (not known). Absent or null is not known.
func jsonLag(raw json.RawMessage) (int64, bool, error) {
	if isNull(raw) || raw[0] == '"' {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("want an integer or a string, got %.40s", string(raw))
	}
	return n, true, nil
}

// jsonText returns a string value as is and any other scalar as its JSON text.
func jsonText(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
