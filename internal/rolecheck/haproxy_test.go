package rolecheck

import (
	"bytes"
	"encoding/hex"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/pgtest"
	"github.com/doorman-go/doorman/internal/protocol"
)

// Seed 001 spells these bytes out; ours must be identical.
const (
	seedStartup    = "00000041000300007573657200706f7374677265730064617461626173650074656d706c61746531006c6f675f646973636f6e6e656374696f6e73006f66660000"
	seedMinimal    = "00000017000300007573657200706f7374677265730000"
	seedOff        = "696e5f686f745f7374616e646279006f666600"
	seedOn         = "696e5f686f745f7374616e646279006f6e00"
	seedTerminate  = "5800000004"
	seedQuery      = "510000002073656c6563742070675f69735f696e5f7265636f7665727928293b00"
	seedRecoveryF  = "66430000000d"
	seedRecoveryT  = "74430000000d"
	seedReadyRFQ   = "5a000000"
	haproxyBinary  = "/usr/sbin/haproxy"
	installHAProxy = "HAProxy is required: apt-get install haproxy (Debian 12 ships 2.6)"
)

func TestPacketsMatchSeed(t *testing.T) {
	require.Equal(t, seedStartup, hex.EncodeToString(StartupPacket("postgres", "template1", true, "")))
	require.Equal(t, seedMinimal, hex.EncodeToString(StartupPacket("postgres", "", false, "")))
	require.Equal(t, seedOff, hex.EncodeToString(HotStandbyPattern(false)))
	require.Equal(t, seedOn, hex.EncodeToString(HotStandbyPattern(true)))
	require.Equal(t, seedTerminate, hex.EncodeToString(TerminatePacket()))
	require.Equal(t, seedQuery, hex.EncodeToString(QueryPacket(RecoveryQuery)))
	require.Equal(t, seedRecoveryF, hex.EncodeToString(RecoveryPattern(false)))
	require.Equal(t, seedRecoveryT, hex.EncodeToString(RecoveryPattern(true)))
	require.True(t, strings.HasPrefix(hex.EncodeToString(ReadyForQueryPrefix()), seedReadyRFQ))
}

// sendBinaries returns the decoded send-binary payloads of tcp-check lines.
func sendBinaries(t *testing.T, lines []string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, l := range lines {
		if h, ok := strings.CutPrefix(l, "tcp-check send-binary "); ok {
			b, err := hex.DecodeString(h)
			require.NoError(t, err)
			out = append(out, b)
		}
	}
	return out
}

// TestGeneratedStartupDecodes: the hex of the generated tcp-check decodes
// (protocol.DecodeStartup) to the startup packet it claims, for the user and
// database given.
func TestGeneratedStartupDecodes(t *testing.T) {
	tests := []struct {
		user, db string
		quiet    bool
		want     map[string]string
		order    []string
	}{
		{"postgres", "template1", true, map[string]string{"user": "postgres", "database": "template1", "log_disconnections": "off"}, []string{"user", "database", "log_disconnections"}},
		{"haproxy_check", "postgres", false, map[string]string{"user": "haproxy_check", "database": "postgres"}, []string{"user", "database"}},
		{"юзер", "база данных", true, map[string]string{"user": "юзер", "database": "база данных", "log_disconnections": "off"}, []string{"user", "database", "log_disconnections"}},
	}
	for _, tt := range tests {
		for _, v := range []Variant{VariantHotStandby, VariantRecovery} {
			t.Run(string(v)+"/"+tt.user, func(t *testing.T) {
				cfg, err := HAProxyConfig(HAProxyOptions{Variant: v, User: tt.user, Database: tt.db, QuietDisconnect: tt.quiet,
					Servers: []HAProxyServer{{Name: "a", Host: "127.0.0.1", Port: 5432}}})
				require.NoError(t, err)
				var lines []string
				for _, l := range strings.Split(cfg, "\n") {
					lines = append(lines, strings.TrimSpace(l))
				}
				sends := sendBinaries(t, lines)
				require.NotEmpty(t, sends)
				payload, err := protocol.ReadStartup(bytes.NewReader(sends[0]), 0)
				require.NoError(t, err)
				msg, err := protocol.DecodeStartup(payload)
				require.NoError(t, err)
				sm, ok := msg.(*protocol.StartupMessage)
				require.True(t, ok, "%T", msg)
				require.Equal(t, uint32(protocol.ProtocolVersion3), sm.ProtocolVersion)
				require.Equal(t, tt.want, sm.Parameters)
				require.Equal(t, tt.order, sm.Order)
				require.Equal(t, seedTerminate, hex.EncodeToString(sends[len(sends)-1]), "Terminate is the last send")
				// The write backend expects "off"/"f", the read port "on"/"t".
				if v == VariantHotStandby {
					require.Equal(t, 2, strings.Count(cfg, "send-binary "+seedTerminate))
					require.Contains(t, cfg, "tcp-check expect binary "+seedOff)
					require.Contains(t, cfg, "tcp-check expect binary "+seedOn)
				} else {
					require.Contains(t, cfg, "tcp-check expect binary "+seedRecoveryF)
					require.Contains(t, cfg, "tcp-check expect binary "+seedRecoveryT)
					require.Contains(t, cfg, "tcp-check send-binary "+seedQuery)
				}
			})
		}
	}
}

// TestHAProxyConfigValid runs haproxy -c on every variant.
func TestHAProxyConfigValid(t *testing.T) {
	if _, err := os.Stat(haproxyBinary); err != nil {
		t.Fatalf("%s: %v", installHAProxy, err)
	}
	servers := []HAProxyServer{{"n1", "127.0.0.1", 5432}, {"n2", "127.0.0.1", 5433}}
	for _, v := range []Variant{VariantHotStandby, VariantRecovery, VariantHTTP, VariantExternal} {
		t.Run(string(v), func(t *testing.T) {
			cfg, err := HAProxyConfig(HAProxyOptions{Variant: v, Servers: servers, QuietDisconnect: true, MaxLag: 16 << 20})
			require.NoError(t, err)
			require.Contains(t, cfg, "nbsrv(pg_write) eq 1")
			require.Contains(t, cfg, "tcp-request connection reject if !single_primary")
			require.Contains(t, cfg, "on-marked-down shutdown-sessions")
			path := filepath.Join(t.TempDir(), "haproxy.cfg")
			require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
			out, err := exec.Command(haproxyBinary, "-c", "-f", path).CombinedOutput()
			require.NoError(t, err, "%s\n%s", out, cfg)
		})
	}
	cfg, err := HAProxyConfig(HAProxyOptions{Servers: servers, HAProxyVersion: "3.1"})
	require.NoError(t, err)
	require.Contains(t, cfg, "init-state down")
	_, err = HAProxyConfig(HAProxyOptions{Variant: "bogus"})
	require.ErrorContains(t, err, "unknown variant")
	require.ErrorContains(t, err, "no servers")
}

func TestParseHAProxyServer(t *testing.T) {
	s, err := ParseHAProxyServer("db1=10.0.0.1:5432", 0)
	require.NoError(t, err)
	require.Equal(t, HAProxyServer{"db1", "10.0.0.1", 5432}, s)
	s, err = ParseHAProxyServer("10.0.0.2:6432", 1)
	require.NoError(t, err)
	require.Equal(t, HAProxyServer{"pg2", "10.0.0.2", 6432}, s)
	for _, bad := range []string{"x=", "host", "h:0", "h:99999", "=h:1x"} {
		_, err := ParseHAProxyServer(bad, 0)
		require.Error(t, err, bad)
	}
}

func TestExternalWrapper(t *testing.T) {
	got := ExternalWrapper("/opt/bin/pgrole_check", []string{"--role", "primary", "--password-file", "/etc/it's"})
	require.Equal(t, "#!/bin/sh\n# external-check command for HAProxy, generated by pgrole_check.\n"+
		"exec /opt/bin/pgrole_check check --role primary --password-file '/etc/it'\\''s' \"$@\"\n", got)
}

// testTCPCheckBytes plays the generated tcp-check conversation against the
// real primary and replica (postgres is trusted over TCP in pgtest) and
// checks that each expected pattern is found exactly where it should be.
func testTCPCheckBytes(t *testing.T, pp pair) {
	for _, v := range []Variant{VariantHotStandby, VariantRecovery} {
		for _, srv := range []struct {
			c       *pgtest.Cluster
			replica bool
		}{{pp.primary, false}, {pp.replica, true}} {
			for _, wantReplica := range []bool{false, true} {
				lines := TCPCheckLines(v, "postgres", "template1", true, wantReplica)
				got := playTCPCheck(t, srv.c.Addr(), lines)
				require.Equal(t, srv.replica == wantReplica, got, "%s on %s, want replica=%v", v, srv.c.Addr(), wantReplica)
			}
		}
	}
}

// playTCPCheck runs tcp-check send-binary/expect binary lines the way
// HAProxy does (an expect searches what arrived since the last send) and
// reports whether every expect matched.
func playTCPCheck(t *testing.T, addr string, lines []string) bool {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err)
	defer conn.Close()
	var got []byte
	buf := make([]byte, 4096)
	for _, l := range lines {
		if h, ok := strings.CutPrefix(l, "tcp-check send-binary "); ok {
			b, _ := hex.DecodeString(h)
			_, err := conn.Write(b)
			require.NoError(t, err)
			got = got[:0]
			continue
		}
		h, ok := strings.CutPrefix(l, "tcp-check expect binary ")
		if !ok {
			continue
		}
		want, _ := hex.DecodeString(h)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(2*time.Second)))
		for !bytes.Contains(got, want) {
			n, err := conn.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF || (err != nil && strings.Contains(err.Error(), "timeout")) {
				return bytes.Contains(got, want)
			}
			require.NoError(t, err)
			if n == 0 {
				break
			}
			// The whole answer arrives quickly; a mismatch shows as a ReadyForQuery
			// with no pattern before it.
			if bytes.Contains(got, []byte("Z\x00\x00\x00\x05I")) && !bytes.Contains(got, want) {
				return false
			}
		}
	}
	return true
}
