package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// setupTimeout bounds creating and starting one cluster.
const setupTimeout = 2 * time.Minute

// Cluster is one running (or stopped) PostgreSQL server. The exported fields
// are read-only.
type Cluster struct {
	BinDir    string // server binaries
	Dir       string // holds DataDir, SocketDir (usually) and LogFile
	DataDir   string
	SocketDir string // unix socket directory, the host of SuperDSN
	LogFile   string // server log, appended to across restarts
	Host      string // "127.0.0.1"
	Port      int    // TCP port, also the unix socket's port
	Name      string // cluster_name, also the application_name of a replica

	env   *env
	opts  Options // with defaults
	group *group

	mu  sync.Mutex // guards cmd
	cmd *exec.Cmd  // the running postmaster, nil when stopped
}

// group is a primary and its replicas: they share users and so pg_hba lines.
type group struct {
	mu        sync.Mutex
	userLines []string
	members   []*Cluster
}

// Start creates and starts a cluster; t.Cleanup stops it in immediate mode
// and deletes its files. If the binaries are missing the test fails with a
// message saying how to install them.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	c, err := newCluster(ctx, opts, nil)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { c.cleanup(t) })
	return c
}

// StartMain is Start for TestMain, where there is no testing.TB: the caller
// runs the returned cleanup after m.Run (not via defer before os.Exit).
func StartMain(opts Options) (*Cluster, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	c, err := newCluster(ctx, opts, nil)
	if err != nil {
		return nil, func() {}, err
	}
	return c, func() {
		if err := c.destroy(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: cleanup %s: %v\n", c.Dir, err)
		}
	}, nil
}

// Main is a TestMain body for a package whose tests share one cluster
// and start goroutines (pg_doorman instances): it starts the cluster, hands
// it to use, runs the tests, removes the cluster and, when they passed,
// fails the run if a goroutine outlived them (goleak: every test stops
// what it started in its cleanup). It returns the exit code for os.Exit.
func Main(m *testing.M, opts Options, use func(*Cluster)) int {
	c, cleanup, err := StartMain(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start PostgreSQL:", err)
		return 1
	}
	use(c)
	code := m.Run()
	cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// newCluster makes the directories, fills the data directory from the
// template (or, for a replica, by pg_basebackup from primary) and starts it.
func newCluster(ctx context.Context, opts Options, primary *Cluster) (*Cluster, error) {
	e, err := getEnv()
	if err != nil {
		return nil, err
	}
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	c, err := e.newDirs(opts)
	if err != nil {
		return nil, err
	}
	if err := c.fill(ctx, primary); err != nil {
		_ = c.destroy()
		return nil, fmt.Errorf("create cluster %s: %w", c.Name, err)
	}
	if err := c.startFresh(ctx); err != nil {
		_ = c.destroy()
		return nil, fmt.Errorf("start cluster %s: %w", c.Name, err)
	}
	return c, nil
}

func (e *env) newDirs(opts Options) (_ *Cluster, err error) {
	if err := e.acquireRoot(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(e.root, "c")
	if err != nil {
		e.releaseRoot()

		return nil, fmt.Errorf("create cluster dir: %w", err)
	}
	c := &Cluster{
		BinDir: e.binDir, Dir: dir, DataDir: filepath.Join(dir, "data"),
		SocketDir: filepath.Join(dir, "sock"), LogFile: filepath.Join(dir, "postgres.log"),
		Host: "127.0.0.1", Name: "pgtest-" + filepath.Base(dir),
		env: e, opts: opts,
	}
	defer func() {
		if err != nil {
			_ = c.destroy()
		}
	}()
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chmod cluster dir: %w", err)
	}
	if err := e.chown(dir); err != nil {
		return nil, err
	}
	// A unix socket path has to fit in 107 bytes.
	if len(c.SocketDir)+len("/.s.PGSQL.65535.lock") > 100 {
		sock, err := os.MkdirTemp("/tmp", fmt.Sprintf("pgtest-%d-sock-", os.Getpid()))
		if err != nil {
			return nil, fmt.Errorf("create socket dir: %w", err)
		}
		_ = os.Remove(sock) // recreated below with the right owner
		c.SocketDir = sock
	}
	if err := e.mkdirOwned(c.SocketDir, 0o755); err != nil {
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	if err := e.writeOwned(c.LogFile, ""); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) fill(ctx context.Context, primary *Cluster) error {
	if primary == nil {
		c.group = &group{members: []*Cluster{c}}
		return c.env.copyTemplate(ctx, c.DataDir)
	}
	c.group = primary.group
	c.group.mu.Lock()
	c.group.members = append(c.group.members, c)
	c.group.mu.Unlock()
	return c.env.run(ctx, "pg_basebackup", "-D", c.DataDir, "-R", "-X", "stream", "-c", "fast",
		"--no-sync", "-h", primary.Host, "-p", strconv.Itoa(primary.Port), "-U", "postgres")
}

// cleanup is the t.Cleanup of Start and AddReplica.
func (c *Cluster) cleanup(t testing.TB) {
	if t.Failed() {
		t.Logf("pgtest: last lines of %s:\n%s", c.LogFile, c.logTail(60))
		if os.Getenv("PGTEST_KEEP") == "1" {
			_ = c.stop(syscallImmediate)
			_ = os.WriteFile(filepath.Join(c.env.root, "KEEP"), nil, 0o644)
			t.Logf("pgtest: PGTEST_KEEP=1: kept %s", c.Dir)
			return
		}
	}
	if err := c.destroy(); err != nil {
		t.Errorf("pgtest: cleanup %s: %v", c.Name, err)
	}
}

// destroy stops the server in immediate mode and deletes its files.
func (c *Cluster) destroy() error {
	err := c.stop(syscallImmediate)
	if c.group != nil {
		c.group.mu.Lock()
		for i, m := range c.group.members {
			if m == c {
				c.group.members = append(c.group.members[:i], c.group.members[i+1:]...)
				break
			}
		}
		c.group.mu.Unlock()
	}
	if rerr := os.RemoveAll(c.Dir); rerr != nil && err == nil {
		err = fmt.Errorf("remove cluster dir: %w", rerr)
	}
	if !strings.HasPrefix(c.SocketDir, c.Dir+string(filepath.Separator)) {
		_ = os.RemoveAll(c.SocketDir)
	}
	c.env.releaseRoot()
	return err
}

// SuperDSN is a keyword/value DSN for the superuser over the unix socket,
// understood by pgx and lib/pq.
func (c *Cluster) SuperDSN(db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable",
		dsnValue(c.SocketDir), c.Port, dsnValue(db))
}

// DSN is a keyword/value DSN over TCP to 127.0.0.1 with sslmode=disable. An
// empty password is left out.
func (c *Cluster) DSN(user, password, db string) string {
	dsn := fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		c.Host, c.Port, dsnValue(user), dsnValue(db))
	if password != "" {
		dsn += " password=" + dsnValue(password)
	}
	return dsn
}

// Addr is the server's TCP address, "127.0.0.1:<port>".
func (c *Cluster) Addr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// SocketPath is the path of the server's unix socket.
func (c *Cluster) SocketPath() string {
	return filepath.Join(c.SocketDir, fmt.Sprintf(".s.PGSQL.%d", c.Port))
}

// dsnValue quotes a DSN value when needed, as libpq's conninfo syntax says.
func dsnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n'\\=") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}

// ReadLog returns the whole server log.
func (c *Cluster) ReadLog(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(c.LogFile)
	if err != nil {
		t.Fatalf("pgtest: read log: %v", err)
	}
	return string(b)
}

// logTail returns the last n lines of the server log, for error messages.
func (c *Cluster) logTail(n int) string {
	b, err := os.ReadFile(c.LogFile)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
