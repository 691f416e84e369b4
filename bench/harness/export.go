package harness

import (
	"context"
	"errors"
)

// The exported API below lets other bench commands (bench/soak) start the
// same PostgreSQL and pg_doorman as the benchmark and read the same process
// facts, without copying this package.

// Server is a throwaway PostgreSQL filled by pgbench -i, with the
// benchmark's role and database.
type Server struct {
	pg *postgres
}

// StartServer starts PostgreSQL allowing maxClients direct clients plus the
// pools of poolSize, and runs pgbench -i -s scale. Stop it with Stop.
func StartServer(ctx context.Context, scale, maxClients, poolSize int) (*Server, error) {
	s := Settings{Scale: scale, PoolSize: poolSize, PreparedClients: maxClients}
	pg, err := startPostgres(ctx, s)
	if err != nil {
		return nil, err
	}
	return &Server{pg: pg}, nil
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.pg.Port }

// Version is the server's version().
func (s *Server) Version() string { return s.pg.version }

// Stop stops the server and removes its data directory.
func (s *Server) Stop() { s.pg.stop() }

// DoormanOptions configure a pg_doorman started by StartDoorman.
type DoormanOptions struct {
	Bin            string // the pg_doorman binary
	Dir            string // work directory (MakeWorkDir) for config and log
	PoolSize       int    // pool_size of the bench user
	MaxClients     int    // client connections it must accept
	PrometheusPort int    // exporter port on 127.0.0.1; 0: off
}

// Doorman is a running pg_doorman child process in transaction mode in
// front of a Server, with the benchmark's user and database.
type Doorman struct {
	p *pooler
}

// StartDoorman writes the benchmark's YAML config for srv and starts
// pg_doorman; it returns once a login succeeds.
func StartDoorman(ctx context.Context, srv *Server, o DoormanOptions) (*Doorman, error) {
	c := poolerConfig{dir: o.Dir, pgPort: srv.pg.Port, verifier: srv.pg.verifier,
		poolSize: o.PoolSize, prepSize: o.PoolSize, maxClients: o.MaxClients, promPort: o.PrometheusPort}
	p, err := startDoorman(ctx, o.Bin, "doorman", c)
	if err != nil {
		return nil, err
	}
	return &Doorman{p: p}, nil
}

// DSN is a pgx DSN of the benchmark's user and database through pg_doorman.
func (d *Doorman) DSN() string { return d.p.dsn(benchDB) }

// PID is pg_doorman's process id.
func (d *Doorman) PID() int { return d.p.proc.PID() }

// Exited reports whether the process has exited, and how.
func (d *Doorman) Exited() (bool, error) {
	select {
	case err := <-d.p.proc.done:
		d.p.proc.done <- err
		if err == nil {
			err = errors.New("exit status 0")
		}
		return true, err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, then SIGKILL after a grace period, and waits.
func (d *Doorman) Stop() error { return d.p.proc.stop() }

// ReadMemory reads VmRSS and VmHWM of pid from /proc.
func ReadMemory(pid int) (Memory, error) { return readMemory(pid) }

// RaiseFileLimit lifts RLIMIT_NOFILE to at least n (children inherit it).
func RaiseFileLimit(n int) error { return raiseFileLimit(n) }

// MakeWorkDir makes a temporary directory the postgres OS user can use.
func MakeWorkDir() (string, error) { return makeWorkDir() }

// FreePort returns a 127.0.0.1 TCP port that was free a moment ago.
func FreePort() (int, error) { return freePort() }

// GitCommit is the short commit of the repository at dir, "+dirty" when
// tracked files are modified.
func GitCommit(dir string) string { return gitCommit(dir) }
