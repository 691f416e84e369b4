package proxy

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/patroni/patronitest"
	"github.com/doorman-go/doorman/internal/proxyconfig"
	"github.com/doorman-go/doorman/internal/sockopt"
)

// Settings of patroni_proxy shown to take effect: each set to two values,
// the behaviour follows the value.

// TestSettingPatroniTimeout: a Patroni API that answers after 1 s fails a
// refresh under patroni_timeout 200ms, within about that time, and serves
// it under 4s.
func TestSettingPatroniTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		timeout time.Duration
		ok      bool
	}{
		{200 * time.Millisecond, false},
		{4 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.timeout.String(), func(t *testing.T) {
			t.Parallel()
			l := newEcho(t, "l")
			h := &harness{t: t, patroni: patronitest.NewServer(t, nil)}
			h.setMembers(l.member(patroni.RoleLeader))
			h.cfg = masterOnly(h.patroni.URL(), nil, func(c *proxyconfig.Config) { c.PatroniTimeout = tt.timeout })
			h.start(Options{Logger: zaptest.NewLogger(t)})
			h.patroni.SetDelay(time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			t0 := time.Now()
			err := h.proxy.Refresh(ctx)
			elapsed := time.Since(t0)
			if tt.ok {
				require.NoError(t, err)
				require.GreaterOrEqual(t, elapsed, time.Second, "it waited for the slow answer")
				return
			}
			require.Error(t, err)
			require.Less(t, elapsed, 900*time.Millisecond, "given up after patroni_timeout, before the 1 s answer")
		})
	}
}

// TestSettingClusterUpdateInterval: the topology is fetched every
// cluster_update_interval of the (manual) clock: with 7s, three seconds
// (the default) bring no fetch, seven do.
func TestSettingClusterUpdateInterval(t *testing.T) {
	t.Parallel()
	l := newEcho(t, "l")
	clock := patronitest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &harness{t: t, patroni: patronitest.NewServer(t, nil), clock: clock}
	h.setMembers(l.member(patroni.RoleLeader))
	h.cfg = masterOnly(h.patroni.URL(), nil, func(c *proxyconfig.Config) { c.ClusterUpdateInterval = 7 * time.Second })
	h.start(Options{Logger: zaptest.NewLogger(t), Clock: clock})
	// The watcher's first fetch (at start) and the harness's refresh.
	require.Eventually(t, func() bool { return h.patroni.Requests() >= 2 }, waitFor, time.Millisecond)
	before := h.patroni.Requests()
	clock.Advance(3 * time.Second)
	// A window for a fetch that must not come (the clock is manual:
	// nothing else can trigger one).
	time.Sleep(150 * time.Millisecond)
	require.Equal(t, before, h.patroni.Requests(), "no fetch three seconds in")
	clock.Advance(4 * time.Second)
	require.Eventually(t, func() bool { return h.patroni.Requests() > before }, waitFor, time.Millisecond, "a fetch at seven seconds")
}

// TestSettingPatroniTLS: a cluster's tls block reaches its Patroni client.
// Against an HTTPS API that asks for a client certificate, the right CA
// (or skip_verify) with the client's certificate refreshes; a wrong CA, or
// no client certificate, does not.
func TestSettingPatroniTLS(t *testing.T) {
	t.Parallel()
	m := patronitest.NewMutualTLS(t, t.TempDir(), "proxy")
	caFile, otherFile, certFile, keyFile := m.CAFile, m.OtherCA, m.CertFile, m.KeyFile
	l := newEcho(t, "l")
	srv := patronitest.NewTLSServer(t, nil, m.Server)
	srv.SetCluster(t, &patroni.Cluster{Members: []patroni.Member{l.member(patroni.RoleLeader)}})
	tests := []struct {
		name string
		tls  *proxyconfig.TLS
		ok   bool
	}{
		{"ca and client cert", &proxyconfig.TLS{CACert: caFile, ClientCert: certFile, ClientKey: keyFile}, true},
		{"skip_verify", &proxyconfig.TLS{SkipVerify: true, ClientCert: certFile, ClientKey: keyFile}, true},
		{"wrong ca", &proxyconfig.TLS{CACert: otherFile, ClientCert: certFile, ClientKey: keyFile}, false},
		{"no client cert", &proxyconfig.TLS{CACert: caFile}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := masterOnly(srv.URL(), tt.tls, func(c *proxyconfig.Config) { c.PatroniTimeout = 5 * time.Second })
			p := New(cfg, Options{Logger: zaptest.NewLogger(t)})
			require.NoError(t, p.Start())
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = p.Shutdown(ctx)
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := p.Refresh(ctx)
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, "l", connect(t, p.PortAddr("c", "master")).backend)
				return
			}
			require.ErrorContains(t, err, "certificate")
		})
	}
}

// TestSettingConnectTimeout: a backend whose connect never completes (its
// listener's accept queue is full, so the kernel drops the SYN) costs a
// client connect_timeout: with 300ms the client is closed soon, with 2.5s it
// still waits a second and a half later.
func TestSettingConnectTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	require.NoError(t, sockopt.SetBacklog(ln, 0))
	var fill []net.Conn
	t.Cleanup(func() {
		for _, c := range fill {
			_ = c.Close()
		}
	})
	for range 2 {
		if c, err := net.DialTimeout("tcp", ln.Addr().String(), 200*time.Millisecond); err == nil {
			fill = append(fill, c)
		}
	}
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), 300*time.Millisecond); err == nil {
		_ = c.Close()
		t.Skip("this kernel completes connects to a full accept queue")
	}
	port := ln.Addr().(*net.TCPAddr).Port
	for _, tt := range []struct {
		timeout time.Duration
		cut     bool
	}{{300 * time.Millisecond, true}, {2500 * time.Millisecond, false}} {
		t.Run(tt.timeout.String(), func(t *testing.T) {
			t.Parallel()
			h := &harness{t: t, patroni: patronitest.NewServer(t, nil)}
			h.setMembers(patroni.Member{Name: "hole", Role: patroni.RoleLeader, State: patroni.StateRunning, Host: "127.0.0.1", Port: port, LagKnown: true})
			h.cfg = masterOnly(h.patroni.URL(), nil, func(c *proxyconfig.Config) { c.ConnectTimeout = tt.timeout })
			h.start(Options{Logger: zaptest.NewLogger(t)})
			c, err := net.DialTimeout("tcp", h.addr("master").String(), waitFor)
			require.NoError(t, err)
			defer c.Close()
			t0 := time.Now()
			require.NoError(t, c.SetReadDeadline(t0.Add(1500*time.Millisecond)))
			_, err = c.Read(make([]byte, 1))
			require.Error(t, err)
			var ne net.Error
			if tt.cut {
				require.False(t, errors.As(err, &ne) && ne.Timeout(), "closed by the proxy, not our deadline: %v", err)
				require.Less(t, time.Since(t0), 1400*time.Millisecond)
				return
			}
			require.True(t, errors.As(err, &ne) && ne.Timeout(), "still connecting: %v", err)
		})
	}
}

// masterOnly is a config of one cluster behind the Patroni API at url
// (with tls, if any) and one port for its leader, on free addresses, with
// one-second timeouts and no update but Refresh's, as set changes it.
func masterOnly(url string, tls *proxyconfig.TLS, set func(*proxyconfig.Config)) *proxyconfig.Config {
	c := &proxyconfig.Config{
		ClusterUpdateInterval: time.Hour, ListenAddress: "127.0.0.1:0",
		ConnectTimeout: time.Second, PatroniTimeout: time.Second, MaxTopologyAge: time.Hour, ShutdownTimeout: time.Second,
		Clusters: map[string]proxyconfig.Cluster{"c": {Hosts: []string{url}, TLS: tls,
			Ports: map[string]proxyconfig.Port{"master": {Listen: "127.0.0.1:0", Roles: []proxyconfig.Role{leader}}}}},
	}
	set(c)
	return c
}
