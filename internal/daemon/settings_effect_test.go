//go:build linux

package daemon_test

// Settings whose effect is on pg_doorman's sockets and on its retain task.
// pg_doorman runs in this process (apptest), so its sockets are file
// descriptors of the test process: a test finds the one it wants by the
// socket inode of its TCP 4-tuple in /proc/net/tcp and reads its options
// back with getsockopt. No hook into the daemon is needed.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/pool"
)

// seTCPFd returns the fd of this process's TCP socket from local port to
// remote port on 127.0.0.1.
func seTCPFd(t *testing.T, local, remote int) int {
	t.Helper()
	inode := seTCPInode(t, local, remote)
	want := fmt.Sprintf("socket:[%s]", inode)
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && link == want {
			fd, err := strconv.Atoi(e.Name())
			require.NoError(t, err)
			return fd
		}
	}
	t.Fatalf("no fd of this process holds %s (%d -> %d)", want, local, remote)
	return -1
}

// seTCPInode finds the inode of the 127.0.0.1:local -> 127.0.0.1:remote
// socket in /proc/net/tcp (addresses in hex, host byte order on x86).
func seTCPInode(t *testing.T, local, remote int) string {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	require.NoError(t, err)
	defer f.Close()
	l, r := fmt.Sprintf("0100007F:%04X", local), fmt.Sprintf("0100007F:%04X", remote)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == l && fields[2] == r {
			return fields[9]
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no socket %s -> %s in /proc/net/tcp", l, r)
	return ""
}

// seSockopts are the options a test reads back from one TCP socket.
type seSockopts struct {
	NoDelay, KeepAlive            bool
	KeepCnt, KeepIdle, KeepIntvl  int // count, seconds, seconds
	UserTimeoutMS, RcvBuf, SndBuf int
}

// seGet reads one integer option of fd.
func seGet(t *testing.T, fd, level, opt int) int {
	t.Helper()
	v, err := unix.GetsockoptInt(fd, level, opt)
	require.NoError(t, err)
	return v
}

func seRead(t *testing.T, fd int) seSockopts {
	t.Helper()
	get := func(level, opt int) int { return seGet(t, fd, level, opt) }
	return seSockopts{
		NoDelay:       get(unix.IPPROTO_TCP, unix.TCP_NODELAY) != 0,
		KeepAlive:     get(unix.SOL_SOCKET, unix.SO_KEEPALIVE) != 0,
		KeepCnt:       get(unix.IPPROTO_TCP, unix.TCP_KEEPCNT),
		KeepIdle:      get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE),
		KeepIntvl:     get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL),
		UserTimeoutMS: get(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT),
		RcvBuf:        get(unix.SOL_SOCKET, unix.SO_RCVBUF),
		SndBuf:        get(unix.SOL_SOCKET, unix.SO_SNDBUF),
	}
}

// TestSettingTCPSocketOptions: tcp_no_delay, tcp_keepalives_*,
// tcp_user_timeout and tcp_socket_buffer_size are read back from the
// client socket pg_doorman accepted, and the keys that apply to server
// connections (tcp_no_delay, tcp_keepalives_idle, tcp_user_timeout) from
// pg_doorman's socket to PostgreSQL. Two sets of values, so a key that
// were ignored fails one of them.
func TestSettingTCPSocketOptions(t *testing.T) {
	tests := []struct {
		name    string
		general string
		client  seSockopts // RcvBuf/SndBuf 0: not asserted (kernel default)
		server  seSockopts // buffers not asserted
	}{
		{
			name:    "set A",
			general: "  tcp_no_delay: true\n  tcp_keepalives_count: 7\n  tcp_keepalives_idle: 11\n  tcp_keepalives_interval: 13\n  tcp_user_timeout: 17\n  tcp_socket_buffer_size: 96KB",
			client:  seSockopts{NoDelay: true, KeepAlive: true, KeepCnt: 7, KeepIdle: 11, KeepIntvl: 13, UserTimeoutMS: 17000, RcvBuf: 2 * 96 << 10, SndBuf: 2 * 96 << 10},
			server:  seSockopts{NoDelay: true, KeepAlive: true, KeepCnt: 7, KeepIdle: 11, KeepIntvl: 13, UserTimeoutMS: 17000},
		},
		{
			name:    "set B",
			general: "  tcp_no_delay: false\n  tcp_keepalives_count: 3\n  tcp_keepalives_idle: 23\n  tcp_keepalives_interval: 29\n  tcp_user_timeout: 31\n  tcp_socket_buffer_size: 160KB",
			client:  seSockopts{NoDelay: false, KeepAlive: true, KeepCnt: 3, KeepIdle: 23, KeepIntvl: 29, UserTimeoutMS: 31000, RcvBuf: 2 * 160 << 10, SndBuf: 2 * 160 << 10},
			server:  seSockopts{NoDelay: false, KeepAlive: true, KeepCnt: 3, KeepIdle: 23, KeepIntvl: 29, UserTimeoutMS: 31000},
		},
		{
			// Idle 0: keepalive stays on with Go's default idle time (15 s)
			// on both sides, interval and count as configured.
			name:    "keepalive idle 0",
			general: "  tcp_keepalives_count: 4\n  tcp_keepalives_idle: 0\n  tcp_keepalives_interval: 7\n  tcp_user_timeout: 19\n  tcp_socket_buffer_size: 64KB",
			client:  seSockopts{NoDelay: true, KeepAlive: true, KeepCnt: 4, KeepIdle: 15, KeepIntvl: 7, UserTimeoutMS: 19000, RcvBuf: 2 * 64 << 10, SndBuf: 2 * 64 << 10},
			server:  seSockopts{NoDelay: true, KeepAlive: true, KeepCnt: 4, KeepIdle: 15, KeepIntvl: 7, UserTimeoutMS: 19000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := apptest.Start(t, config(t, tt.general))
			c, err := dial(t, d, "benchdb")
			require.NoError(t, err)
			defer c.Close(context.Background())
			// pg_doorman's local port towards PostgreSQL, seen by the
			// backend that serves this transaction.
			var serverSide int
			require.NoError(t, c.QueryRow(context.Background(), "SELECT inet_client_port()").Scan(&serverSide))

			clientPort := c.PgConn().Conn().LocalAddr().(*net.TCPAddr).Port
			got := seRead(t, seTCPFd(t, d.Port, clientPort))
			require.Equal(t, tt.client, got, "accepted client socket")

			srv := seRead(t, seTCPFd(t, serverSide, pg.Port))
			t.Logf("server socket: %+v", srv)
			require.Equal(t, tt.server.NoDelay, srv.NoDelay, "server socket TCP_NODELAY")
			require.Equal(t, tt.server.KeepAlive, srv.KeepAlive, "server socket SO_KEEPALIVE")
			require.Equal(t, tt.server.KeepIdle, srv.KeepIdle, "server socket TCP_KEEPIDLE")
			require.Equal(t, tt.server.KeepIntvl, srv.KeepIntvl, "server socket TCP_KEEPINTVL")
			require.Equal(t, tt.server.KeepCnt, srv.KeepCnt, "server socket TCP_KEEPCNT")
			require.Equal(t, tt.server.UserTimeoutMS, srv.UserTimeoutMS, "server socket TCP_USER_TIMEOUT")
		})
	}
}

// TestSettingTCPSocketOptionsReload: the client options are set once on
// the listener (read back from it), which accepted sockets inherit; a
// reload that changes them reaches the next client all the same, the ones
// whose new value is the kernel's default (tcp_no_delay off,
// tcp_user_timeout 0) too, and a reload back to the first values gives
// those again.
func TestSettingTCPSocketOptionsReload(t *testing.T) {
	first := "  tcp_no_delay: true\n  tcp_keepalives_count: 7\n  tcp_keepalives_idle: 11\n  tcp_keepalives_interval: 13\n  tcp_user_timeout: 17"
	second := "  tcp_no_delay: false\n  tcp_keepalives_count: 0\n  tcp_keepalives_idle: 0\n  tcp_keepalives_interval: 29\n  tcp_user_timeout: 0"
	wantFirst := seSockopts{NoDelay: true, KeepAlive: true, KeepCnt: 7, KeepIdle: 11, KeepIntvl: 13, UserTimeoutMS: 17000}
	wantSecond := seSockopts{NoDelay: false, KeepAlive: true, KeepCnt: 9, KeepIdle: 15, KeepIntvl: 29, UserTimeoutMS: 0}
	d := apptest.Start(t, config(t, first))
	client := func(step string) seSockopts {
		t.Helper()
		c, err := dial(t, d, "benchdb")
		require.NoError(t, err, step)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		got := seRead(t, seTCPFd(t, d.Port, c.PgConn().Conn().LocalAddr().(*net.TCPAddr).Port))
		got.RcvBuf, got.SndBuf = 0, 0 // the kernel's defaults: not asserted
		return got
	}
	// The listener carries them, all but TCP_USER_TIMEOUT (set per socket;
	// this kernel does not even read it back from a listening socket).
	lfd := seListenerFd(t, d.Port)
	get := func(level, opt int) int { return seGet(t, lfd, level, opt) }
	require.Equal(t, []int{1, 1, 7, 11, 13}, []int{get(unix.IPPROTO_TCP, unix.TCP_NODELAY), get(unix.SOL_SOCKET, unix.SO_KEEPALIVE),
		get(unix.IPPROTO_TCP, unix.TCP_KEEPCNT), get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE), get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)},
		"listening socket: nodelay, keepalive, count, idle, interval")
	require.Equal(t, wantFirst, client("first"), "first settings")
	d.WriteConfig(t, config(t, second))
	require.NoError(t, d.Daemon.Reload())
	require.Equal(t, wantSecond, client("after the reload"), "reloaded settings")
	d.WriteConfig(t, config(t, first))
	require.NoError(t, d.Daemon.Reload())
	require.Equal(t, wantFirst, client("after the reload back"), "first settings again")
}

// seListenerFd returns the fd of this process's listening TCP socket on
// 127.0.0.1:port.
func seListenerFd(t *testing.T, port int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		if on, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || on == 0 {
			continue
		}
		if sa, err := unix.Getsockname(fd); err == nil {
			if in, ok := sa.(*unix.SockaddrInet4); ok && in.Port == port {
				return fd
			}
		}
	}
	t.Fatalf("no listening socket on port %d", port)
	return -1
}

// TestSettingTCPUserTimeoutZero: 0 leaves TCP_USER_TIMEOUT at the kernel's
// 0 on both sides, as the reference says ("0 = OS default").
func TestSettingTCPUserTimeoutZero(t *testing.T) {
	d := apptest.Start(t, config(t, "  tcp_user_timeout: 0"))
	c, err := dial(t, d, "benchdb")
	require.NoError(t, err)
	defer c.Close(context.Background())
	var serverSide int
	require.NoError(t, c.QueryRow(context.Background(), "SELECT inet_client_port()").Scan(&serverSide))
	clientPort := c.PgConn().Conn().LocalAddr().(*net.TCPAddr).Port
	require.Zero(t, seRead(t, seTCPFd(t, d.Port, clientPort)).UserTimeoutMS)
	require.Zero(t, seRead(t, seTCPFd(t, serverSide, pg.Port)).UserTimeoutMS)
}

// seUnixPeerFds lists this process's unix stream sockets connected to path.
func seUnixPeerFds(t *testing.T, path string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var fds []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		if link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err != nil || !strings.HasPrefix(link, "socket:") {
			continue
		}
		if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
			continue
		}
		if sa, err := unix.Getpeername(fd); err == nil {
			if ua, ok := sa.(*unix.SockaddrUnix); ok && ua.Name == path {
				fds = append(fds, fd)
			}
		}
	}
	return fds
}

// TestSettingUnixSocketBufferSize: pg_doorman's unix-socket connections to
// PostgreSQL have SO_SNDBUF and SO_RCVBUF of unix_socket_buffer_size (the
// kernel reports twice the value set). Other unix connections of the test
// process to PostgreSQL (pgtest helpers) keep the kernel default, so the
// sockets are told apart by their value and counted against the pool.
func TestSettingUnixSocketBufferSize(t *testing.T) {
	setup(t)
	tests := []struct {
		name string
		key  string
		want int
	}{
		{"48KB", "48KB", 2 * 48 << 10},
		{"80KB", "80KB", 2 * 80 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  unix_socket_buffer_size: %s
pools:
  benchdb:
    server_host: %q
    server_port: %d
    users:
      - username: bench
        password: '%s'
        pool_size: 4
`, tt.key, pg.SocketDir, pg.Port, verifier)
			d := apptest.Start(t, tmpl)
			c, err := dial(t, d, "benchdb")
			require.NoError(t, err)
			defer c.Close(context.Background())
			var addr *string
			require.NoError(t, c.QueryRow(context.Background(), "SELECT inet_client_addr()::text").Scan(&addr))
			require.Nil(t, addr, "the backend was reached over the unix socket")

			p, ok := d.Daemon.Pools.Lookup("benchdb", "bench")
			require.True(t, ok)
			total := p.Conns().Stats().Total
			require.Positive(t, total)
			var matching []int
			for _, fd := range seUnixPeerFds(t, pg.SocketPath()) {
				snd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
				require.NoError(t, err)
				rcv, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
				require.NoError(t, err)
				t.Logf("fd %d: SO_SNDBUF %d SO_RCVBUF %d", fd, snd, rcv)
				if snd == tt.want && rcv == tt.want {
					matching = append(matching, fd)
				}
			}
			require.Len(t, matching, total, "every server connection of the pool has the configured buffers")
		})
	}
}

// seFourIdle opens four backends in the pool (four clients inside a
// transaction at once), returns them and waits until all four were
// returned (or, byAge, created) longer than past ago: past idle_timeout or
// server_lifetime with their +20% jitter.
func seFourIdle(t *testing.T, d *apptest.Instance, past time.Duration, byAge bool) (stats func() pool.Stats, retain func()) {
	t.Helper()
	ctx := context.Background()
	var commits []func() error
	for range 4 {
		c, err := dial(t, d, "benchdb")
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		tx, err := c.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "SELECT 1")
		require.NoError(t, err)
		commits = append(commits, func() error { return tx.Commit(ctx) })
	}
	for _, commit := range commits {
		require.NoError(t, commit())
	}
	p, ok := d.Daemon.Pools.Lookup("benchdb", "bench")
	require.True(t, ok)
	require.Eventually(t, func() bool { return p.Conns().Stats().Idle == 4 }, 20*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		for _, ic := range p.Conns().IdleSnapshot() {
			since := ic.ReturnedAt
			if byAge {
				since = ic.CreatedAt
			}
			if time.Since(since) < past {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond)
	stats = func() pool.Stats { return p.Conns().Stats() }
	retain = func() { d.Daemon.Pools.RetainOnce(ctx) }
	return stats, retain
}

// TestSettingRetainConnectionsMax: one retain cycle closes at most
// retain_connections_max expired idle connections; 0 closes all of them.
// The cycles are run by the test (retain_connections_time: 1h keeps the
// daemon's own loop out of the way), so the count per cycle is exact.
func TestSettingRetainConnectionsMax(t *testing.T) {
	tests := []struct {
		max      int
		perCycle []int // idle connections left after each cycle
	}{
		{max: 1, perCycle: []int{3, 2, 1, 0}},
		{max: 3, perCycle: []int{1, 0}},
		{max: 0, perCycle: []int{0}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("max %d", tt.max), func(t *testing.T) {
			d := apptest.Start(t, config(t, fmt.Sprintf("  idle_timeout: 200ms\n  retain_connections_time: 1h\n  retain_connections_max: %d", tt.max)))
			stats, retain := seFourIdle(t, d, 300*time.Millisecond, false)
			s := stats()
			require.Equal(t, 4, s.Idle, "nothing closed before the first cycle")
			require.Zero(t, s.IdleExpired)
			for i, want := range tt.perCycle {
				retain()
				s = stats()
				require.Equal(t, want, s.Idle, "idle after cycle %d", i+1)
				require.EqualValues(t, 4-want, s.IdleExpired, "idle_timeout closes after cycle %d", i+1)
			}
		})
	}
}

// TestSettingRetainConnectionsTime: with a short retain_connections_time the
// daemon's own retain loop closes the expired idle connections, well
// before the default 30s interval would have.
func TestSettingRetainConnectionsTime(t *testing.T) {
	d := apptest.Start(t, config(t, "  idle_timeout: 200ms\n  retain_connections_time: 100ms\n  retain_connections_max: 0"))
	p, ok := d.Daemon.Pools.Lookup("benchdb", "bench")
	require.True(t, ok)
	c, err := dial(t, d, "benchdb")
	require.NoError(t, err)
	defer c.Close(context.Background())
	_, err = c.Exec(context.Background(), "SELECT 1")
	require.NoError(t, err)
	require.Eventually(t, func() bool { s := p.Conns().Stats(); return s.Total == 0 && s.IdleExpired == 1 }, 20*time.Second, 20*time.Millisecond)
}

// TestSettingServerLifetime: a retain cycle closes idle connections older
// than server_lifetime (counted as LifetimeClosed, not idle_timeout) and
// keeps them while they are younger. idle_timeout 0 keeps that key out.
func TestSettingServerLifetime(t *testing.T) {
	tests := []struct {
		name     string
		lifetime string
		wantIdle int
	}{
		{"2s: closed once older", "2s", 0},
		{"1h: kept", "1h", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := apptest.Start(t, config(t, "  idle_timeout: 0\n  retain_connections_time: 1h\n  retain_connections_max: 0\n  server_lifetime: "+tt.lifetime))
			// 2.5s covers the 2s lifetime's +20% jitter.
			stats, retain := seFourIdle(t, d, 2500*time.Millisecond, true)
			require.Equal(t, 4, stats().Idle)
			retain()
			s := stats()
			require.Equal(t, tt.wantIdle, s.Idle)
			require.EqualValues(t, 4-tt.wantIdle, s.LifetimeClosed)
			require.Zero(t, s.IdleExpired)
		})
	}
}

// TestSettingPoolPolicyWiring: the pool keys whose behaviour the pool
// package's unit tests cover with a fake connector (scaling_warm_pool_ratio,
// scaling_fast_retries, scaling_max_parallel_creates,
// server_idle_check_timeout, server_round_robin, pool_size, min_pool_size,
// idle_timeout, server_lifetime) reach the running pool, from general and
// from the pool level, at start and after a reload.
func TestSettingPoolPolicyWiring(t *testing.T) {
	tmpl := func(general, poolKeys string) string { return wiringConfig(t, general, poolKeys) }
	first := tmpl("  scaling_warm_pool_ratio: 30\n  scaling_fast_retries: 5\n  scaling_max_parallel_creates: 3\n  server_idle_check_timeout: 7s\n  server_round_robin: true\n  idle_timeout: 9s\n  server_lifetime: 11s", "")
	second := tmpl("  scaling_max_parallel_creates: 1\n  server_idle_check_timeout: 0\n  server_lifetime: 11s",
		"    scaling_warm_pool_ratio: 60\n    scaling_fast_retries: 0\n    idle_timeout: 13s\n    server_lifetime: 17s")
	d := apptest.Start(t, first)
	p, ok := d.Daemon.Pools.Lookup("benchdb", "bench")
	require.True(t, ok)
	require.Equal(t, pool.Config{MaxSize: 7, MaxParallelCreates: 3, RoundRobin: true, IdleTimeout: 9 * time.Second,
		Lifetime: 11 * time.Second, IdleCheckTimeout: 7 * time.Second, WarmRatio: 30, FastRetries: 5}, p.Conns().Config(), "from general")

	d.WriteConfig(t, second)
	require.NoError(t, d.Daemon.Reload())
	p, ok = d.Daemon.Pools.Lookup("benchdb", "bench")
	require.True(t, ok)
	require.Equal(t, pool.Config{MaxSize: 7, MaxParallelCreates: 1, IdleTimeout: 13 * time.Second,
		Lifetime: 17 * time.Second, WarmRatio: 60}, p.Conns().Config(), "pool level overrides general, after a reload")
}

// TestSettingCoordinatorWiring: the pool coordinator's keys reach the
// coordinator of their database, also after a reload that changes them
// (its behaviour under each is internal/coordinator's tests').
func TestSettingCoordinatorWiring(t *testing.T) {
	tmpl := func(keys string) string { return wiringConfig(t, "", keys) }
	d := apptest.Start(t, tmpl("    max_db_connections: 9\n    reserve_pool_size: 2\n    reserve_pool_timeout: 700ms\n    min_connection_lifetime: 4s\n    min_guaranteed_pool_size: 3"))
	cs := d.Daemon.Pools.Coordinators()
	require.Len(t, cs, 1)
	require.Equal(t, coordinator.Config{Database: "benchdb", MaxDBConnections: 9, ReservePoolSize: 2,
		ReservePoolTimeout: 700 * time.Millisecond, MinConnectionLifetime: 4 * time.Second, MinGuaranteedPoolSize: 3}, cs[0].Config())

	d.WriteConfig(t, tmpl("    max_db_connections: 9\n    reserve_pool_size: 1\n    reserve_pool_timeout: 1500ms\n    min_connection_lifetime: 4s\n    min_guaranteed_pool_size: 5"))
	require.NoError(t, d.Daemon.Reload())
	cs = d.Daemon.Pools.Coordinators()
	require.Len(t, cs, 1)
	require.Equal(t, coordinator.Config{Database: "benchdb", MaxDBConnections: 9, ReservePoolSize: 1,
		ReservePoolTimeout: 1500 * time.Millisecond, MinConnectionLifetime: 4 * time.Second, MinGuaranteedPoolSize: 5}, cs[0].Config(), "after a reload")
}

// wiringConfig is the config of the wiring tests: general keys and keys of
// the pool benchdb (indented for their section), one user of pool size 7.
func wiringConfig(t *testing.T, general, poolKeys string) string {
	setup(t)
	return fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
%s
pools:
  benchdb:
    server_host: 127.0.0.1
    server_port: %d
%s
    users:
      - username: bench
        password: '%s'
        pool_size: 7
        min_pool_size: 0
`, general, pg.Port, poolKeys, verifier)
}
