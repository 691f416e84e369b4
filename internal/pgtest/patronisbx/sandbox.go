package patronisbx

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/doorman-go/doorman/internal/patroni"
)

// The fixed layout shared by every end-to-end test package.
const (
	Base           = "/tmp/doorman-e2e-sbx"
	PGPort         = 25432
	APIPort        = 28008
	EtcdClientPort = 22379
	EtcdPeerPort   = 22380
	Nodes          = 3
	// EnvVar must be "1" for Up to run the cluster; otherwise tests skip.
	EnvVar = "PATRONI_E2E"
	// PGBin is the PostgreSQL the sandbox runs (the scripts' PG_BIN).
	PGBin = "/usr/lib/postgresql/15/bin"
	// RunUser owns and runs the cluster when the tests run as root.
	RunUser = "postgres"

	installHint = "apt-get install -y patroni etcd-server etcd-client postgresql-15 (scripts/deps.sh test does it)"
	upTimeout   = 5 * time.Minute
)

// Node is one cluster member as the sandbox lays it out.
type Node struct {
	Name      string // "node1"
	Host      string // "127.0.1.1"
	Port      int    // PostgreSQL TCP port, the same on every node
	APIURL    string // "http://127.0.1.1:28008"
	SocketDir string // BASE/node1/sock: the unix socket directory
	DataDir   string // BASE/node1/data
}

// Addr is host:port of the node's PostgreSQL.
func (n Node) Addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)) }

// Sandbox is the fixed cluster layout plus the scripts that manage it.
type Sandbox struct {
	Base    string
	Nodes   []Node
	scripts string // folder of up.sh and friends
}

// New describes the sandbox without checking or starting anything.
func New() *Sandbox {
	s := &Sandbox{Base: Base, scripts: scriptDir()}
	for i := 1; i <= Nodes; i++ {
		host := fmt.Sprintf("127.0.1.%d", i)
		dir := filepath.Join(Base, fmt.Sprintf("node%d", i))
		s.Nodes = append(s.Nodes, Node{
			Name: fmt.Sprintf("node%d", i), Host: host, Port: PGPort,
			APIURL:    "http://" + net.JoinHostPort(host, strconv.Itoa(APIPort)),
			SocketDir: filepath.Join(dir, "sock"), DataDir: filepath.Join(dir, "data"),
		})
	}
	return s
}

// Up skips t unless PATRONI_E2E=1, fails it when patroni or etcd is not
// installed, and otherwise starts (or checks) the cluster: see WaitHealthy.
func Up(t testing.TB) *Sandbox {
	t.Helper()
	if os.Getenv(EnvVar) != "1" {
		t.Skipf("set %s=1 to run against a real Patroni cluster (make test-e2e)", EnvVar)
	}
	for _, bin := range []string{"patroni", "patronictl", "etcd", "etcdctl", filepath.Join(PGBin, "pg_ctl")} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s=1 but %s is missing: %s", EnvVar, bin, installHint)
		}
	}
	s := New()
	if _, err := os.Stat(filepath.Join(s.scripts, "up.sh")); err != nil {
		t.Fatalf("sandbox scripts not found next to the patronisbx sources: %v", err)
	}
	s.WaitHealthy(t)
	return s
}

// WaitHealthy runs up.sh: it restarts whatever of the sandbox is not
// running and returns once there is one leader and two streaming replicas
// (at most 5 minutes). Note that up.sh also resets the app users'
// passwords, which gives them new SCRAM salts.
func (s *Sandbox) WaitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	start := time.Now()
	out, err := s.script(ctx, nil, "up.sh", s.Base)
	if err != nil {
		t.Fatalf("sandbox up.sh: %v\n%s", err, tail(out, 40))
	}
	t.Logf("sandbox healthy after %s: %s", time.Since(start).Round(time.Millisecond), readyLine(out))
}

// Down stops the sandbox and deletes BASE (down.sh with WIPE=1).
func (s *Sandbox) Down(ctx context.Context) error {
	out, err := s.script(ctx, []string{"WIPE=1"}, "down.sh", s.Base)
	if err != nil {
		return fmt.Errorf("sandbox down.sh: %w\n%s", err, tail(out, 20))
	}
	return nil
}

// Node returns the node called name ("node1").
func (s *Sandbox) Node(t testing.TB, name string) Node {
	t.Helper()
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no sandbox node %q", name)
	return Node{}
}

// APIURLs lists every node's REST API base URL.
func (s *Sandbox) APIURLs() []string {
	urls := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		urls[i] = n.APIURL
	}
	return urls
}

// FetchCluster reads GET /cluster from the first node that answers.
func (s *Sandbox) FetchCluster(ctx context.Context) (*patroni.Cluster, error) {
	c, err := patroni.NewClient(s.APIURLs(), patroni.ClientOptions{Timeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.CloseIdleConnections()
	cl, _, err := c.FetchCluster(ctx)
	return cl, err
}

// Cluster is FetchCluster for the test goroutine.
func (s *Sandbox) Cluster(t testing.TB) *patroni.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := s.FetchCluster(ctx)
	if err != nil {
		t.Fatalf("sandbox /cluster: %v", err)
	}
	return cl
}

// Leader returns the node that /cluster names leader; exactly one must.
func (s *Sandbox) Leader(t testing.TB) Node {
	t.Helper()
	leaders := s.Cluster(t).Leaders()
	if len(leaders) != 1 {
		t.Fatalf("sandbox has %d leaders, want 1", len(leaders))
	}
	return s.Node(t, leaders[0].Name)
}

// WaitMember polls /cluster every 100 ms until the member called name
// satisfies ok, and returns it; it fails t after timeout.
func (s *Sandbox) WaitMember(t testing.TB, name string, timeout time.Duration, ok func(patroni.Member) bool) patroni.Member {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		if cl, err := s.FetchCluster(ctx); err != nil {
			last = err.Error()
		} else if m, found := cl.Member(name); !found {
			last = "not in /cluster"
		} else if ok(m) {
			return m
		} else {
			last = fmt.Sprintf("role %s, state %s", m.Role, m.State)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("sandbox member %s: condition not met within %s (last: %s)", name, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// script runs one of the vendored scripts with the fixed layout.
func (s *Sandbox) script(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.scripts, name), args...)
	cmd.Env = append(os.Environ(),
		"PATRONI_SANDBOX_DIR="+s.Base, "NODE_IPS=1", "NODES="+strconv.Itoa(Nodes),
		"PG_PORT_BASE="+strconv.Itoa(PGPort), "API_PORT_BASE="+strconv.Itoa(APIPort),
		"ETCD_CLIENT_PORT="+strconv.Itoa(EtcdClientPort), "ETCD_PEER_PORT="+strconv.Itoa(EtcdPeerPort),
		"PG_BIN="+PGBin, "RUN_USER="+RunUser, "SYNC=0", "RESET=0")
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// scriptDir is the sandbox/ folder beside this source file.
func scriptDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "sandbox"
	}
	return filepath.Join(filepath.Dir(file), "sandbox")
}

func readyLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "cluster ready:") {
			return strings.TrimSpace(l)
		}
	}
	return tail(out, 1)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
