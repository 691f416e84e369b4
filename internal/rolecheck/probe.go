package rolecheck

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// lagQuery returns pg_is_in_recovery() and, on a replica, how many bytes of
// WAL the primary has that this server has not replayed yet. latest_end_lsn
// is the primary's end of WAL as of the last message of the WAL sender; only
// roles with pg_read_all_stats (pg_monitor) can see it, so the WAL received
// so far is the fallback. NULL lag means unknown (no streaming since start).
const lagQuery = `select pg_is_in_recovery(), case when pg_is_in_recovery() then ` +
	`greatest(0, pg_wal_lsn_diff(greatest((select latest_end_lsn from pg_stat_wal_receiver), ` +
	`pg_last_wal_receive_lsn()), pg_last_wal_replay_lsn()))::bigint end;`

// State is what one probe learnt about a server.
type State struct {
	Addr       string
	Method     Method
	InRecovery bool          // true on a replica (hot standby)
	LagBytes   int64         // replay lag of a replica in bytes; -1 when not measured or unknown
	Version    string        // server_version ParameterStatus
	Took       time.Duration // how long the probe took
}

// Role is the role the state shows: RolePrimary or RoleReplica.
func (s State) Role() Role {
	if s.InRecovery {
		return RoleReplica
	}
	return RolePrimary
}

// Probe connects once, learns the role with o.Method and, when o.MaxLag > 0 or
// measureLag is set and the server is a replica, the replication lag. It
// always sends Terminate before closing. o is normalized first.
func Probe(ctx context.Context, o Options, measureLag bool) (State, error) {
	o, err := o.Normalize()
	if err != nil {
		return State{}, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	st := State{Addr: o.Addr(), Method: o.Method, LagBytes: -1}
	s, err := dial(ctx, o)
	if err != nil {
		return st, err
	}
	defer s.close()
	if err := s.login(o); err != nil {
		return st, fmt.Errorf("log in to %s as %s: %w", st.Addr, o.User, err)
	}
	st.Version = s.params["server_version"]
	needLag := measureLag || o.MaxLag > 0
	if o.Method == MethodHotStandby {
		v, ok := s.params["in_hot_standby"]
		if !ok {
			return st, ErrNoHotStandby
		}
		st.InRecovery = v == "on"
		if !st.InRecovery || !needLag {
			st.Took = time.Since(start)
			return st, nil
		}
	}
	q := RecoveryQuery
	if needLag {
		q = lagQuery
	}
	row, err := s.queryRow(q)
	if err != nil {
		return st, fmt.Errorf("query %s: %w", st.Addr, err)
	}
	if err := st.scan(row); err != nil {
		return st, fmt.Errorf("query %s: %w", st.Addr, err)
	}
	st.Took = time.Since(start)
	return st, nil
}

// scan reads (in_recovery[, lag]) from a row in text format.
func (s *State) scan(row []*string) error {
	if len(row) == 0 || row[0] == nil {
		return fmt.Errorf("unexpected result %d columns", len(row))
	}
	switch *row[0] {
	case "t":
		s.InRecovery = true
	case "f":
		s.InRecovery = false
	default:
		return fmt.Errorf("unexpected pg_is_in_recovery() value %q", *row[0])
	}
	if len(row) > 1 && row[1] != nil {
		n, err := strconv.ParseInt(*row[1], 10, 64)
		if err != nil {
			return fmt.Errorf("unexpected lag value %q", *row[1])
		}
		s.LagBytes = n
	}
	if !s.InRecovery {
		s.LagBytes = 0
	}
	return nil
}

// Verdict is the answer to "does this server fit the route?".
type Verdict struct {
	Match  bool
	Reason string // one line, no secrets
}

// Evaluate decides whether st fits role with at most maxLag bytes of replay
// lag (0: no limit). A primary has no lag. A replica whose lag is unknown
// does not match when a limit is set: fail closed.
func Evaluate(st State, role Role, maxLag int64) Verdict {
	got := st.Role()
	desc := fmt.Sprintf("%s is %s", st.Addr, got)
	if role != RoleAny && got != role {
		return Verdict{Reason: fmt.Sprintf("%s, want %s", desc, role)}
	}
	if got == RoleReplica && maxLag > 0 {
		switch {
		case st.LagBytes < 0:
			return Verdict{Reason: desc + ", replication lag unknown (not streaming?)"}
		case st.LagBytes > maxLag:
			return Verdict{Reason: fmt.Sprintf("%s, replication lag %d bytes exceeds %s", desc, st.LagBytes, FormatSize(maxLag))}
		}
	}
	if got == RoleReplica && st.LagBytes >= 0 {
		desc += fmt.Sprintf(", replication lag %d bytes", st.LagBytes)
	}
	return Verdict{Match: true, Reason: desc}
}

// Check probes the server of o and evaluates it against o.Role and o.MaxLag.
// An error means the role could not be learnt (exit code 2 of the CLI).
func Check(ctx context.Context, o Options) (Verdict, State, error) {
	o, err := o.Normalize()
	if err != nil {
		return Verdict{}, State{}, err
	}
	st, err := Probe(ctx, o, false)
	if err != nil {
		return Verdict{}, st, err
	}
	return Evaluate(st, o.Role, o.MaxLag), st, nil
}
