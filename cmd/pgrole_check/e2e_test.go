//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
	"github.com/doorman-go/doorman/internal/rolecheck"
	"github.com/doorman-go/doorman/internal/testbuf"
)

const (
	haproxyBinary = "/usr/sbin/haproxy"
	fall, rise    = 2, 2
	// tcpInter is the check interval of the tcp-check variant. HAProxy kills
	// an external check after min(inter, timeout check), and forking a Go
	// binary that logs in with SCRAM takes ~100 ms on an idle box and over a
	// second on a loaded one: the external variant gets extInter.
	tcpInter = 200 * time.Millisecond
	extInter = 2 * time.Second
)

// checkTimeout is HAProxy's timeout check: 1s for tcp-checks (they may
// outlast inter), just under inter for external checks, which HAProxy kills
// after min(inter, timeout connect); the generator sets timeout connect to it.
func checkTimeout(inter time.Duration) time.Duration { return max(time.Second, inter*9/10) }

// detectBound: fall checks (the first at inter, the rest at fastinter)
// plus one check timeout and slack for a loaded machine.
func detectBound(inter time.Duration) time.Duration {
	return fall*inter + checkTimeout(inter) + 1500*time.Millisecond
}

// haproxy is a running HAProxy with a write and a read port.
type haproxy struct {
	write, read int
	inter       time.Duration
	out         *testbuf.Buffer
}

func startHAProxy(t *testing.T, inter time.Duration, o rolecheck.HAProxyOptions) *haproxy {
	t.Helper()
	if _, err := os.Stat(haproxyBinary); err != nil {
		t.Fatalf("HAProxy is required: apt-get install haproxy (Debian 12 ships 2.6): %v", err)
	}
	h := &haproxy{write: freePort(t), read: freePort(t), inter: inter, out: &testbuf.Buffer{}}
	o.Bind, o.WritePort, o.ReadPort = "127.0.0.1", h.write, h.read
	o.Inter, o.FastInter, o.DownInter, o.Rise, o.Fall, o.CheckTimeout = inter, inter/2, inter, rise, fall, checkTimeout(inter)
	cfg, err := rolecheck.HAProxyConfig(o)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	cmd := exec.Command(haproxyBinary, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = h.out, h.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy config:\n%s\nhaproxy output:\n%s", cfg, h.out.String())
		}
	})
	return h
}

// write inserts a row through the write port and returns the port of the
// server that took it.
func (h *haproxy) write1(val int) (int, error) {
	c, err := pgConnect(h.write, "postgres")
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var port int
	err = c.QueryRow(context.Background(),
		"insert into e2e(v) values ($1) returning current_setting('port')::int", val).Scan(&port)
	return port, err
}

// readPort returns the port of the server the read port leads to.
func (h *haproxy) readServer() (int, error) {
	c, err := pgConnect(h.read, "postgres")
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var port int
	var rec bool
	err = c.QueryRow(context.Background(), "select current_setting('port')::int, pg_is_in_recovery()").Scan(&port, &rec)
	if err == nil && !rec {
		return port, fmt.Errorf("read port led to a primary (%d)", port)
	}
	return port, err
}

// waitWrite polls until a write through the write port lands on want.
func (h *haproxy) waitWrite(t *testing.T, want *pgtest.Cluster, val int, within time.Duration) {
	t.Helper()
	var last error
	var got int
	require.Eventually(t, func() bool {
		got, last = h.write1(val)
		return last == nil
	}, within, 50*time.Millisecond, "write port never opened: %v\n%s", last, h.out.String())
	require.Equal(t, want.Port, got, "the write landed on the wrong server")
	require.Equal(t, int64(1), want.QueryInt(t, "select count(*) from e2e where v = $1", val))
}

// waitRefused polls until the write port refuses new connections and
// returns how long that took; it then checks that it keeps refusing.
func (h *haproxy) waitRefused(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.Eventually(t, func() bool {
		_, err := h.write1(0)
		return err != nil
	}, within, 20*time.Millisecond, "write port still open after %s\n%s", within, h.out.String())
	took := time.Since(start)
	for range 5 {
		_, err := h.write1(0)
		require.Error(t, err, "write port opened again")
		time.Sleep(h.inter / 2) // spaced attempts across several check rounds
	}
	return took
}

// scenario: steady state, primary stop, primary back, two primaries, one again.
func scenario(t *testing.T, pp pair, h *haproxy) {
	begin := time.Now()
	phase := func(name string) { t.Logf("%6.2fs %s", time.Since(begin).Seconds(), name) }
	pp.primary.Exec(t, "create table e2e (v int)")
	pp.primary.Exec(t, "grant all on e2e to "+checkUser)
	h.waitWrite(t, pp.primary, 1, 20*time.Second)
	var rp int
	var err error
	require.Eventually(t, func() bool { rp, err = h.readServer(); return err == nil }, 10*time.Second, 50*time.Millisecond, "read port: %v", err)
	require.Equal(t, pp.replica.Port, rp)
	phase("steady: writes on the primary, reads on the replica")

	// The primary stops: the write port closes within the configured fall.
	pp.primary.Stop(t)
	took := h.waitRefused(t, detectBound(h.inter))
	t.Logf("write port closed %s after the primary stopped (bound %s)", took, detectBound(h.inter))

	pp.primary.Start(t)
	h.waitWrite(t, pp.primary, 2, 20*time.Second)
	phase("primary back, write port open")

	// Split brain: the replica is promoted while the old primary runs.
	pp.replica.Promote(t)
	phase("replica promoted")
	// A server going UP needs rise passing checks (downinter, then fastinter).
	took = h.waitRefused(t, (rise+1)*h.inter+checkTimeout(h.inter)+3*time.Second)
	t.Logf("write port refused %s after the second primary appeared", took)

	// The single primary is back: the write port opens again.
	pp.replica.Stop(t)
	h.waitWrite(t, pp.primary, 3, 20*time.Second)
	phase("single primary again, write port open")
}

// TestHAProxyExternalCheck: pgrole_check as HAProxy's external check, with
// password authentication and the recovery method.
func TestHAProxyExternalCheck(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	start := time.Now()
	pp := startPair(t, pgtest.Options{})
	t.Logf("pair started in %s", time.Since(start))
	dir := t.TempDir()
	pw := passwordFile(t, checkPass)
	wrappers := map[string]string{}
	for _, role := range []string{"primary", "replica"} {
		path := filepath.Join(dir, "check-"+role)
		script := rolecheck.ExternalWrapper(bin, []string{"--role", role, "--method", "recovery", "--user", checkUser,
			"--database", "postgres", "--password-file", pw, "--timeout", "1600ms", "--verbose"})
		require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
		wrappers[role] = path
	}
	h := startHAProxy(t, extInter, rolecheck.HAProxyOptions{Variant: rolecheck.VariantExternal,
		CommandPrimary: wrappers["primary"], CommandReplica: wrappers["replica"],
		Servers: []rolecheck.HAProxyServer{{Name: "n1", Host: "127.0.0.1", Port: pp.primary.Port}, {Name: "n2", Host: "127.0.0.1", Port: pp.replica.Port}}})
	scenario(t, pp, h)
}

// TestHAProxyTCPCheck: the generated tcp-check (in_hot_standby in the
// startup answer, log_disconnections=off, Terminate) with a trusted user.
func TestHAProxyTCPCheck(t *testing.T) {
	t.Parallel()
	pp := startPair(t, pgtest.Options{ExtraHba: []string{"host all haproxy_check 127.0.0.1/32 trust"}})
	pp.primary.CreateUser(t, "haproxy_check", "unused-password", "")
	pp.primary.Exec(t, "grant set on parameter log_disconnections to haproxy_check")
	pp.primary.WaitReplay(t, pp.replica)
	h := startHAProxy(t, tcpInter, rolecheck.HAProxyOptions{Variant: rolecheck.VariantHotStandby, User: "haproxy_check",
		Database: "postgres", QuietDisconnect: true,
		Servers: []rolecheck.HAProxyServer{{Name: "n1", Host: "127.0.0.1", Port: pp.primary.Port}, {Name: "n2", Host: "127.0.0.1", Port: pp.replica.Port}}})
	scenario(t, pp, h)
	log := pp.primary.ReadLog(t)
	require.NotContains(t, log, "Connection reset by peer", "tcp-check must send Terminate (connect linger)")
	require.NotContains(t, log, "disconnection: session time: 0:00:00.000 user=haproxy_check", "log_disconnections=off")
}
