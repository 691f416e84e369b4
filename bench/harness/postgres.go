package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/doorman-go/doorman/internal/pgtest"
)

// The benchmark's role and database.
const (
	benchUser     = "bench"
	benchPassword = "bench-secret"
	benchDB       = "bench"
)

// postgres is the benchmarked server.
type postgres struct {
	*pgtest.Cluster
	verifier string // SCRAM verifier of benchUser, for the poolers' user lists
	version  string
	maxConns int // max_connections
	stop     func()
}

// startPostgres starts a throwaway PostgreSQL allowing maxClients direct
// clients plus the poolers' pools, creates the role and the database and
// fills it with pgbench -i -s scale.
func startPostgres(ctx context.Context, s Settings) (*postgres, error) {
	maxConn := max(500, s.MaxClients()+3*s.PoolSize+20)
	c, stop, err := pgtest.StartMain(pgtest.Options{
		MaxConnections: maxConn,
		ExtraConf: map[string]string{
			"shared_buffers":     "256MB",
			"log_connections":    "off",
			"log_disconnections": "off",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start postgresql: %w", err)
	}
	pg := &postgres{Cluster: c, maxConns: maxConn, stop: stop}
	if err := pg.setup(ctx, s.Scale); err != nil {
		stop()
		return nil, err
	}
	return pg, nil
}

// setup creates the role and database and runs pgbench -i.
func (pg *postgres) setup(ctx context.Context, scale int) error {
	conn, err := pgx.Connect(ctx, pg.SuperDSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect as superuser: %w", err)
	}
	defer conn.Close(ctx)
	stmts := []string{
		"SET password_encryption = 'scram-sha-256'",
		"CREATE ROLE " + benchUser + " LOGIN PASSWORD '" + benchPassword + "'",
		"CREATE DATABASE " + benchDB + " OWNER " + benchUser,
	}
	for _, sql := range stmts {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("setup %q: %w", sql, err)
		}
	}
	q := "SELECT rolpassword, version() FROM pg_authid WHERE rolname = $1"
	if err := conn.QueryRow(ctx, q, benchUser).Scan(&pg.verifier, &pg.version); err != nil {
		return fmt.Errorf("read verifier: %w", err)
	}
	pgbench, err := pgtest.FindBinary("pgbench")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, pgbench, "-i", "-q", "-s", strconv.Itoa(scale),
		"-h", pg.Host, "-p", strconv.Itoa(pg.Port), "-U", benchUser, benchDB)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+benchPassword)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgbench -i: %w\n%s", err, out)
	}
	return nil
}
