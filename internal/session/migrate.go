package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
)

// MigrationState is what an idle client carries to the new process of a
// binary upgrade, besides its socket: enough to go on without a new login.
// It holds secrets (the pool's SCRAM ClientKey, an auth_query verifier)
// and travels only over the socketpair between the two processes.
type MigrationState struct {
	Database, User, AppName string
	Local                   bool
	ConnectedAt             time.Time
	CancelPID, CancelSecret uint32
	ClientParams            map[string]string // what the client has been told
	Statements              []MigratedStatement
	Unnamed                 []byte // the client's last unnamed Parse, re-sent before its next use
	// ClientKey is the SCRAM ClientKey a passthrough pool logs in with;
	// the new process has it only once a client logged in there.
	ClientKey []byte
	// AuthQuery: the user was looked up by auth_query; Verifier is what
	// its passthrough pool logs in with.
	AuthQuery bool
	Verifier  string
}

// MigratedStatement is one of the client's prepared statement names.
type MigratedStatement struct {
	Name, Query, Context string
	ParamOIDs            []uint32
}

// Migrator takes an idle client's socket (the caller keeps its own copy
// of f and closes it) and state to the new process.
type Migrator interface {
	Migrate(st *MigrationState, f *os.File) error
}

// errMigrated ends a session whose client now belongs to the new process.
var errMigrated = errors.New("client migrated to the new process")

// Migrate asks the session to move to the new process at its next idle
// point: now when parked, when its transaction ends otherwise. It reports
// false for a session that cannot move: not logged in, the admin console,
// TLS (the TLS state cannot cross processes), session mode (it holds a
// server connection); those are drained instead.
func (s *Session) Migrate(m Migrator) bool {
	if !s.CanMigrate() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed {
		return false
	}
	if s.migrateTo == nil {
		s.migrateTo = m
		s.migrating.Store(true)
	}
	if s.parked && s.env.Parker != nil {
		if sc, ok := s.raw.(syscall.Conn); ok {
			s.env.Parker.Unpark(sc) // resume runs in a new goroutine and hands off
		}
	}
	if cl := s.coreLocked(); cl != nil {
		// Back to a goroutine at its idle point, which hands off.
		s.env.Core.post(corePost{kind: postHandBack, cl: cl})
	}
	return true
}

// CanMigrate reports whether Migrate would take the session (the daemon
// drains the others).
func (s *Session) CanMigrate() bool {
	switch s.State() { // an atomic: login has finished writing s.pool when it reads idle/active
	case StateIdle, StateActive, StateWaiting:
	default:
		return false
	}
	return !s.Admin && s.tls == nil && s.pool != nil && s.pool.Settings().Mode() == "transaction"
}

// idleForMigration: no server attached and nothing of the client's read
// but not handled: the socket alone is the client's whole state.
func (s *Session) idleForMigration() bool {
	return s.attached() == nil && s.crd.Buffered() == 0 && !s.skipToSync
}

// handOff moves the client to the new process. It returns errMigrated
// when it did; on failure the session goes on here (it is drained later)
// and is not offered again.
func (s *Session) handOff() error {
	s.mu.Lock()
	m := s.migrateTo
	s.mu.Unlock()
	s.migrating.Store(false)
	fc, ok := s.raw.(interface{ File() (*os.File, error) })
	if m == nil || !ok {
		return nil
	}
	f, err := fc.File() // a dup: the socket lives on in the new process when we close ours
	if err == nil {
		err = m.Migrate(s.migrationState(), f)
		_ = f.Close()
	}
	if err != nil {
		s.logger().Warn("client not migrated, it stays until it leaves or shutdown_timeout", zap.Stringer("addr", s.RemoteAddr), zap.Error(err))
		return nil
	}
	s.logger().Info(migrationLine(s, "client %s migrated to new process"), zap.Stringer("addr", s.RemoteAddr))
	return errMigrated
}

func (s *Session) migrationState() *MigrationState {
	st := &MigrationState{
		Database: s.Database, User: s.User, AppName: s.AppName, Local: s.Local, ConnectedAt: s.ConnectedAt,
		CancelPID: s.cancelPID, CancelSecret: s.cancelSecret, ClientParams: s.tracked.toMap(),
		ClientKey: s.pool.ClientKey(),
	}
	if s.pool.Dynamic() {
		st.AuthQuery, st.Verifier = true, s.pool.Settings().User.Password
	}
	if s.rw != nil {
		st.Unnamed = s.rw.unnamed
		for _, e := range s.rw.names.Entries() {
			st.Statements = append(st.Statements, MigratedStatement{Name: e.Name, Query: e.Statement.Query,
				Context: e.Statement.Context, ParamOIDs: e.Statement.ParamOIDs})
		}
	}
	return st
}

// Adopt runs a client migrated from the old process: nc is its socket, st
// what it brought. It picks the session up at its idle point, as if it had
// just been welcomed, and ends like Serve. A client whose pool is gone
// from the new configuration gets FATAL 08P01.
func Adopt(ctx context.Context, env *Env, nc net.Conn, st *MigrationState, ended func()) {
	s := &Session{env: env, nc: rawio.Wrap(nc), raw: nc, ConnectedAt: st.ConnectedAt, RemoteAddr: nc.RemoteAddr(), ended: ended,
		Database: st.Database, User: st.User, AppName: st.AppName, Local: st.Local}
	s.state.Store(StateLogin)
	s.end(s.adopt(ctx, st))
}

func (s *Session) adopt(ctx context.Context, st *MigrationState) error {
	if !s.env.Clients.adopt(s, st.CancelPID, st.CancelSecret) {
		s.logger().Warn("migrated client's cancel key is taken here: its cancel requests will not be found")
	}
	s.registered = true
	p, err := s.migratedPool(st)
	if err != nil {
		return s.refuse(&ClientError{Code: "08P01", Message: "pool is gone after the binary upgrade: reconnect", Err: err})
	}
	s.pool = p
	if st.ClientKey != nil {
		p.SetClientKey(st.ClientKey)
	}
	set := p.Settings()
	s.tracked.fromMap(st.ClientParams, &s.env.tracked)
	if set.General.PreparedStatements && set.Mode() == "transaction" {
		s.rw = newRewriter(p, s.User)
		s.rw.unnamed = st.Unnamed
		for _, ms := range st.Statements { // oldest first: the LRU order survives
			stmt, _ := p.Statements.Get(ms.Query, ms.ParamOIDs, ms.Context)
			s.rw.names.Put(ms.Name, stmt)
		}
	}
	s.applyLinger()
	p.Stats.Clients.Add(1)
	s.counted = true
	s.state.Store(StateIdle)
	if s.general().LogClientConnections {
		s.logger().Info(migrationLine(s, "migrated client accepted from %s"), zap.Stringer("addr", s.RemoteAddr))
	}
	return s.startRun(ctx)
}

// replaceReader gives the session a client reader over src with limit
// maxLen. What the old one read ahead (a client that sent its first query
// with its last login message, without waiting for AuthenticationOk) is
// the new one's first input, and the old one's buffer goes back.
func (s *Session) replaceReader(src io.Reader, maxLen int) {
	rd := protocol.NewReader(src, 0, maxLen)
	if old := s.crd; old != nil {
		rd.Prime(old.Unread())
		old.Reset(nil)
		old.Release()
	}
	s.crd = rd
}

// migratedPool finds the pool of a migrated client in this configuration.
func (s *Session) migratedPool(st *MigrationState) (*pooler.Pool, error) {
	if p, ok := s.env.Pools.Lookup(s.Database, s.User); ok {
		return p, nil
	}
	if st.AuthQuery && s.env.Pools.AuthQuery(s.Database) != nil {
		return s.env.Pools.AuthQueryPool(s.Database, s.User, st.Verifier)
	}
	return nil, fmt.Errorf("migrated client: no pool for user %q in database %q", s.User, s.Database)
}

// startRun sets up the client loop's reader and runs it: the end of a
// login, or of an adoption.
func (s *Session) startRun(ctx context.Context) error {
	if !s.coreMayAdopt() {
		if err := s.promote(); err != nil {
			return err
		}
	}
	g := s.general()
	s.clientRead = newClientRead(s.env, s.nc, g.ProxyCopyDataTimeout)
	s.replaceReader(&s.guard, MaxClientMessage)
	s.fresh = true
	return s.run(ctx)
}

// migrationLine is a migration's log line in the seed's words, which its
// monitoring section lists: "[user@pool #c42] client 10.0.0.1:51234
// migrated to new process". The session's fields follow as on every line.
func migrationLine(s *Session, format string) string {
	return fmt.Sprintf("[%s@%s #c%d] "+format, s.User, s.Database, s.ID, s.RemoteAddr)
}
