package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/lib/pq"
	"github.com/stretchr/testify/require"
)

func connectTCP(ctx context.Context, c *Cluster, user, password string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, c.DSN(user, password, "postgres"))
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func TestStartSettings(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	require.Equal(t, "127.0.0.1", c.Host)
	require.FileExists(t, c.SocketPath())
	for setting, want := range map[string]string{
		"fsync":                      "off",
		"synchronous_commit":         "off",
		"full_page_writes":           "off",
		"max_connections":            "200",
		"shared_buffers":             "32MB",
		"wal_level":                  "replica",
		"hot_standby":                "on",
		"password_encryption":        "scram-sha-256",
		"log_connections":            "on",
		"logging_collector":          "off",
		"listen_addresses":           "127.0.0.1",
		"unix_socket_directories":    c.SocketDir,
		"cluster_name":               c.Name,
		"dynamic_shared_memory_type": "mmap",
	} {
		require.Equal(t, want, c.QueryString(t, "SELECT current_setting($1)", setting), setting)
	}
	require.EqualValues(t, c.Port, c.QueryInt(t, "SELECT current_setting('port')::int"))
	require.GreaterOrEqual(t, c.QueryInt(t, "SELECT current_setting('server_version_num')::int"), int64(150000))

	// The superuser DSN works with lib/pq too, and TCP trusts postgres.
	db, err := sql.Open("postgres", c.SuperDSN("postgres"))
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Ping())
	conn, err := connectTCP(context.Background(), c, "postgres", "")
	require.NoError(t, err)
	require.NoError(t, conn.Close(context.Background()))
}

func TestStopStartRestart(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	c.Exec(t, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	started := c.QueryString(t, "SELECT pg_postmaster_start_time()::text")

	c.Stop(t)
	require.Error(t, c.WaitReady(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pgx.Connect(ctx, c.SuperDSN("postgres"))
	require.Error(t, err)
	require.NoFileExists(t, filepath.Join(c.DataDir, "postmaster.pid"))

	c.Start(t)
	require.NoError(t, c.WaitReady(ctx))
	require.EqualValues(t, 42, c.QueryInt(t, "SELECT v FROM kept"))

	c.Restart(t)
	require.NotEqual(t, started, c.QueryString(t, "SELECT pg_postmaster_start_time()::text"))
	require.Contains(t, c.ReadLog(t), "received fast shutdown request")
}

func TestOptionsApplied(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{
		MaxConnections:     50,
		PasswordEncryption: "md5",
		HostAuthMethod:     "md5",
		ExtraConf:          map[string]string{"work_mem": "8MB", "application_name": "two words"},
		ExtraHba:           []string{"host all blocked 127.0.0.1/32 reject"},
	})
	require.EqualValues(t, 50, c.QueryInt(t, "SELECT current_setting('max_connections')::int"))
	require.Equal(t, "md5", c.QueryString(t, "SHOW password_encryption"))
	require.Equal(t, "8MB", c.QueryString(t, "SHOW work_mem"))
	require.Equal(t, "two words", c.QueryString(t, "SELECT current_setting('application_name')"))

	// The default password_encryption of the cluster is used when method is "".
	require.Regexp(t, `^md5[0-9a-f]{32}$`, c.CreateUser(t, "dflt", "pw", ""))
	ctx := context.Background()
	conn, err := connectTCP(ctx, c, "dflt", "pw")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	// The extra hba line comes before the per-user line CreateUser adds.
	c.CreateUser(t, "blocked", "pw", "md5")
	_, err = connectTCP(ctx, c, "blocked", "pw")
	require.Equal(t, "28000", sqlState(err), "%v", err)
}

func TestPasswordUsers(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	tests := []struct {
		name, user, password, method string
		verifier                     *regexp.Regexp
	}{
		{"md5", "md5_user", "md5 secret", "md5", regexp.MustCompile(`^md5[0-9a-f]{32}$`)},
		{"scram", "scram_user", "scr'am\\secret", "scram-sha-256", regexp.MustCompile(`^SCRAM-SHA-256\$4096:[^$]+\$[^:]+:.+$`)},
		{"mixed case name", "Mixed User", "x", "scram-sha-256", regexp.MustCompile(`^SCRAM-SHA-256\$`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.CreateUser(t, tt.user, tt.password, tt.method)
			require.Regexp(t, tt.verifier, got)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := connectTCP(ctx, c, tt.user, tt.password)
			require.NoError(t, err)
			var user string
			require.NoError(t, conn.QueryRow(ctx, "SELECT current_user").Scan(&user))
			require.Equal(t, tt.user, user)
			require.NoError(t, conn.Close(ctx))

			_, err = connectTCP(ctx, c, tt.user, tt.password+"x")
			require.Equal(t, "28P01", sqlState(err), "wrong password must fail authentication: %v", err)
		})
	}
	// A user with no hba line of its own meets the scram catch-all line.
	c.Exec(t, "SET password_encryption = 'md5'; CREATE ROLE plain_md5 LOGIN PASSWORD 'pw'")
	_, err := connectTCP(context.Background(), c, "plain_md5", "pw")
	require.Equal(t, "28P01", sqlState(err), "%v", err)
}

func TestCreateDatabase(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	c.CreateDatabase(t, "app-db")
	c.ExecDB(t, "app-db", "CREATE TABLE t (v int)")
	conn := c.Connect(t, "app-db")
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n))
	require.Zero(t, n)
}

func TestReplicaStreamsAndPromotes(t *testing.T) {
	t.Parallel()
	primary := Start(t, Options{})
	primary.Exec(t, "CREATE TABLE r (v int); INSERT INTO r VALUES (1)")
	replica := primary.AddReplica(t)
	require.NotEqual(t, primary.Port, replica.Port)
	require.NotEqual(t, primary.SocketDir, replica.SocketDir)

	primary.Exec(t, "INSERT INTO r VALUES (2)")
	primary.CreateUser(t, "app", "pw", "scram-sha-256")
	primary.WaitReplay(t, replica)
	require.EqualValues(t, 3, replica.QueryInt(t, "SELECT sum(v) FROM r"))
	var inRecovery bool
	require.NoError(t, replica.QueryRow(t, "SELECT pg_is_in_recovery()").Scan(&inRecovery))
	require.True(t, inRecovery)

	// The replica shares the user's hba line.
	ctx := context.Background()
	conn, err := connectTCP(ctx, replica, "app", "pw")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "INSERT INTO r VALUES (3)")
	require.Equal(t, "25006", sqlState(err), "a standby must be read-only: %v", err)
	require.NoError(t, conn.Close(ctx))

	replica.Promote(t)
	replica.Exec(t, "INSERT INTO r VALUES (10)")
	require.EqualValues(t, 13, replica.QueryInt(t, "SELECT sum(v) FROM r"))
}

func TestKillBackend(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	c.CreateUser(t, "victim", "pw", "md5")
	ctx := context.Background()
	conn, err := connectTCP(ctx, c, "victim", "pw")
	require.NoError(t, err)
	defer conn.Close(ctx)
	pid := int(conn.PgConn().PID())
	require.Equal(t, []int{pid}, c.BackendPIDs(t, "victim"))
	require.Contains(t, c.BackendPIDs(t, ""), pid)

	c.KillBackend(t, pid)
	_, err = conn.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.Empty(t, c.BackendPIDs(t, "victim"))
	require.Contains(t, c.ReadLog(t), "terminated by signal 9")
	c.Exec(t, "SELECT 1") // recovered
}

func TestKillPostmasterThenStart(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	// As after a real crash, commits not yet written by the WAL writer are
	// lost with synchronous_commit=off, so this one waits for its write.
	c.Exec(t, "SET synchronous_commit = on; CREATE TABLE k (v int); INSERT INTO k VALUES (7)")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.SuperDSN("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	pm, err := postmasterPID(c.DataDir)
	require.NoError(t, err)
	backend := int(conn.PgConn().PID())

	c.KillPostmaster(t)
	require.False(t, alive(pm))
	require.False(t, alive(backend))
	_, err = conn.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.NoFileExists(t, filepath.Join(c.DataDir, "postmaster.pid"))

	c.Start(t)
	require.EqualValues(t, 7, c.QueryInt(t, "SELECT v FROM k"))
	require.Contains(t, c.ReadLog(t), "database system was interrupted")
}

func TestLogFile(t *testing.T) {
	t.Parallel()
	c := Start(t, Options{})
	require.NotContains(t, c.ReadLog(t), "the database system is starting up",
		"the harness does not knock before the server is up")
	c.CreateUser(t, "logged", "pw", "scram-sha-256")
	ctx := context.Background()
	conn, err := connectTCP(ctx, c, "logged", "pw")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	// The disconnection line is written by the exiting backend: poll for it.
	ts := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+ \[\d+\] `
	authorized := regexp.MustCompile(`(?m)^` + ts + `logged@postgres LOG:  connection authorized: user=logged database=postgres`)
	disconnected := regexp.MustCompile(`(?m)^` + ts + `logged@postgres LOG:  disconnection: session time: `)
	require.Eventually(t, func() bool {
		log, err := os.ReadFile(c.LogFile)
		return err == nil && authorized.Match(log) && disconnected.Match(log)
	}, 10*time.Second, 10*time.Millisecond, "log:\n%s", c.logTail(20))
}

func TestPortClashDetected(t *testing.T) {
	t.Parallel()
	a := Start(t, Options{})
	e, err := getEnv()
	require.NoError(t, err)
	opts, err := Options{}.withDefaults()
	require.NoError(t, err)
	b, err := e.newDirs(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.destroy()) })
	ctx := context.Background()
	require.NoError(t, b.fill(ctx, nil))
	b.Port = a.Port
	require.NoError(t, b.writeConfig())
	err = b.startServer(ctx)
	require.ErrorIs(t, err, errPortInUse)

	// startFresh moves on to another port.
	require.NoError(t, b.startFresh(ctx))
	require.NotEqual(t, a.Port, b.Port)
	require.NoError(t, b.WaitReady(ctx))
}
