package session_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/auth"
	"github.com/doorman-go/doorman/internal/protocol"
)

// Careless and hostile clients in the startup, authentication and
// connection-ending phases. Where PostgreSQL defines the answer, the same
// bytes go to PostgreSQL itself and both transcripts must agree.

// hsConn is a raw client connection that records what the server answers.
type hsConn struct {
	t  *testing.T
	nc net.Conn
}

func hsDial(t *testing.T, port int) *hsConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(15*time.Second)))
	return &hsConn{t: t, nc: nc}
}

func (c *hsConn) send(b []byte) {
	c.t.Helper()
	_, err := c.nc.Write(b)
	require.NoError(c.t, err)
}

// message reads one message and describes it: "R 10", "v 196608 [..]",
// "E 28P01 text", or "EOF"/"reset"/the read error when the stream ends.
func (c *hsConn) message() (string, []byte) {
	var hdr [5]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return hsEnd(err), nil
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[1:])-4)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return "truncated " + hsEnd(err), nil
	}
	return hsDescribe(hdr[0], body), body
}

// byteAnswer reads the answer to an SSLRequest/GSSENCRequest: one byte,
// or an ErrorResponse.
func (c *hsConn) byteAnswer() string {
	var b [1]byte
	if _, err := io.ReadFull(c.nc, b[:]); err != nil {
		return hsEnd(err)
	}
	if b[0] != 'E' {
		return string(b[:])
	}
	var l [4]byte
	if _, err := io.ReadFull(c.nc, l[:]); err != nil {
		return "truncated " + hsEnd(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(l[:])-4)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return "truncated " + hsEnd(err)
	}
	return hsDescribe('E', body)
}

func hsDescribe(typ byte, body []byte) string {
	switch typ {
	case 'R':
		return fmt.Sprintf("R %d", binary.BigEndian.Uint32(body))
	case 'v':
		var m pgproto3.NegotiateProtocolVersion
		if err := m.Decode(body); err != nil {
			return "v undecodable: " + err.Error()
		}
		return fmt.Sprintf("v %d %v", m.NewestMinorProtocol, m.UnrecognizedOptions)
	case 'E':
		var m pgproto3.ErrorResponse
		if err := m.Decode(body); err != nil {
			return "E undecodable: " + err.Error()
		}
		return fmt.Sprintf("E %s %s %s", m.Severity, m.Code, m.Message)
	}
	return string(typ)
}

// hsEnd names how a stream ended: a clean close is "EOF".
func hsEnd(err error) string {
	switch {
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return err.Error()
}

// hsPacket is a startup-phase packet; byteAnswer marks SSL/GSS requests.
type hsPacket struct {
	b          []byte
	byteAnswer bool
}

var (
	hsSSL = hsPacket{protocol.SSLRequest{}.Encode(nil), true}
	hsGSS = hsPacket{protocol.GSSENCRequest{}.Encode(nil), true}
)

func hsStartup(version uint32, kv ...string) hsPacket {
	m := protocol.StartupMessage{ProtocolVersion: version, Parameters: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Parameters[kv[i]] = kv[i+1]
		m.Order = append(m.Order, kv[i])
	}
	return hsPacket{b: m.Encode(nil)}
}

// hsTranscript sends packets one by one and records the answers until an
// authentication request, or an error and the end of the stream.
func hsTranscript(t *testing.T, port int, packets ...hsPacket) []string {
	t.Helper()
	c := hsDial(t, port)
	var out []string
	for _, p := range packets {
		c.send(p.b)
		if p.byteAnswer {
			a := c.byteAnswer()
			out = append(out, a)
			if strings.HasPrefix(a, "E ") {
				d, _ := c.message()
				return append(out, d)
			}
			continue
		}
		for {
			d, _ := c.message()
			out = append(out, d)
			if strings.HasPrefix(d, "E ") {
				d, _ = c.message()
				return append(out, d)
			}
			if !strings.HasPrefix(d, "v ") && !strings.HasPrefix(d, "N") {
				return out
			}
		}
	}
	return out
}

// hsBystander is a client logged in before the hostile one; check proves
// it still works.
func hsBystander(t *testing.T, d *apptest.Instance) (check func()) {
	t.Helper()
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	return func() {
		t.Helper()
		var n int
		require.NoError(t, c.QueryRow(context.Background(), "SELECT 41 + 1").Scan(&n))
		require.Equal(t, 42, n)
	}
}

const hsV30 = protocol.ProtocolVersion3

func TestHostileStartupAsPostgres(t *testing.T) {
	d := start(t, "", "transaction", 2)
	check := hsBystander(t, d)
	user := []string{"user", "app", "database", "appdb"}
	tests := []struct {
		name    string
		packets []hsPacket
		want    []string
		gss     bool // PostgreSQL built with GSSAPI accepts GSSENCRequest over TCP ('G'): not compared
	}{
		{"protocol 3.2", []hsPacket{hsStartup(hsV30|2, user...)},
			[]string{"v 196608 []", "R 10"}, false},
		{"protocol options", []hsPacket{hsStartup(hsV30, append(user, "_pq_.compression", "on", "_pq_.x", "")...)},
			[]string{"v 196608 [_pq_.compression _pq_.x]", "R 10"}, false},
		{"protocol 3.1 with an option", []hsPacket{hsStartup(hsV30|1, append(user, "_pq_.a", "1")...)},
			[]string{"v 196608 [_pq_.a]", "R 10"}, false},
		{"SSLRequest twice", []hsPacket{hsSSL, hsSSL},
			[]string{"N", "E FATAL 0A000 unsupported frontend protocol 1234.5679: server supports 3.0 to 3.0", "EOF"}, false},
		{"SSLRequest, GSSENCRequest, startup", []hsPacket{hsSSL, hsGSS, hsStartup(hsV30, user...)},
			[]string{"N", "N", "R 10"}, true},
		{"GSSENCRequest, SSLRequest, startup", []hsPacket{hsGSS, hsSSL, hsStartup(hsV30, user...)},
			[]string{"N", "N", "R 10"}, true},
		{"GSSENCRequest twice", []hsPacket{hsGSS, hsGSS},
			[]string{"N", "E FATAL 0A000 unsupported frontend protocol 1234.5680: server supports 3.0 to 3.0", "EOF"}, true},
		{"SSLRequest, GSSENCRequest, SSLRequest", []hsPacket{hsSSL, hsGSS, hsSSL},
			[]string{"N", "N", "E FATAL 0A000 unsupported frontend protocol 1234.5679: server supports 3.0 to 3.0", "EOF"}, true},
		{"protocol 4.0", []hsPacket{hsStartup(4 << 16)},
			[]string{"E FATAL 0A000 unsupported frontend protocol 4.0: server supports 3.0 to 3.0", "EOF"}, false},
		{"no user", []hsPacket{hsStartup(hsV30, "database", "appdb")},
			[]string{"E FATAL 28000 no PostgreSQL user name specified in startup packet", "EOF"}, false},
		{"unknown user", []hsPacket{hsStartup(hsV30, "user", "ghost", "database", "appdb")},
			[]string{"R 10"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hsTranscript(t, d.Port, tt.packets...)
			require.Equal(t, tt.want, got, "pg_doorman")
			if !tt.gss {
				require.Equal(t, hsTranscript(t, pg.Port, tt.packets...), got, "PostgreSQL answers the same")
			}
		})
	}
	// Requests sent without waiting for the answer: PostgreSQL sees the
	// unread bytes after its 'N' (pq_buffer_has_data) and refuses.
	pipelined := []struct {
		name   string
		stream []byte
		want   []string
	}{
		{"1000 SSLRequests at once", bytes.Repeat(hsSSL.b, 1000),
			[]string{"N", "E FATAL 08P01 received unencrypted data after SSL request", "EOF"}},
		{"SSLRequest and startup at once", append(append([]byte{}, hsSSL.b...), hsStartup(hsV30, user...).b...),
			[]string{"N", "E FATAL 08P01 received unencrypted data after SSL request", "EOF"}},
		{"GSSENCRequest and startup at once", append(append([]byte{}, hsGSS.b...), hsStartup(hsV30, user...).b...),
			[]string{"N", "E FATAL 08P01 received unencrypted data after GSSAPI encryption request", "EOF"}},
	}
	for _, tt := range pipelined {
		t.Run(tt.name, func(t *testing.T) {
			run := func(port int) []string {
				c := hsDial(t, port)
				c.send(tt.stream)
				first := c.byteAnswer()
				second := c.byteAnswer()
				end, _ := c.message()
				return []string{first, second, end}
			}
			got := run(d.Port)
			require.Equal(t, tt.want, got, "pg_doorman; the unread bytes are drained, not reset")
			if !strings.HasPrefix(tt.name, "GSS") {
				require.Equal(t, run(pg.Port), got, "PostgreSQL answers the same")
			}
		})
	}
	check()
}

// hsSCRAM runs the SCRAM exchange after "R 10" and returns the salt and
// iteration count the server offered and the server's last answer.
func hsSCRAM(t *testing.T, c *hsConn, password string) (salt string, iterations int, last string) {
	t.Helper()
	cl := auth.NewSCRAMClientPassword(password, nil)
	c.send(protocol.SASLInitialResponse{Mechanism: auth.SCRAMMechanism, Data: cl.ClientFirst()}.Encode(nil))
	d, body := c.message()
	require.Equal(t, "R 11", d)
	for _, attr := range strings.Split(string(body[4:]), ",") {
		switch {
		case strings.HasPrefix(attr, "s="):
			salt = attr[2:]
		case strings.HasPrefix(attr, "i="):
			iterations, _ = strconv.Atoi(attr[2:])
		}
	}
	final, err := cl.ServerFirst(body[4:])
	require.NoError(t, err)
	c.send(protocol.SASLResponse{Data: final}.Encode(nil))
	last, _ = c.message()
	if last == "R 12" { // SASLFinal: authenticated; what follows decides
		last, _ = c.message()
	}
	if strings.HasPrefix(last, "E ") {
		end, _ := c.message()
		require.Equal(t, "EOF", end, "a refused login ends with a clean close")
	}
	return salt, iterations, last
}

// hsLoginAttempt starts a session for user/database and, when challenged
// with SCRAM, answers with password.
func hsLoginAttempt(t *testing.T, port int, user, database, password string) (challenge, salt string, iterations int, last string) {
	t.Helper()
	c := hsDial(t, port)
	c.send(hsStartup(hsV30, "user", user, "database", database).b)
	challenge, _ = c.message()
	if challenge != "R 10" {
		if strings.HasPrefix(challenge, "E ") {
			end, _ := c.message()
			require.Equal(t, "EOF", end)
		}
		return challenge, "", 0, challenge
	}
	salt, iterations, last = hsSCRAM(t, c, password)
	return challenge, salt, iterations, last
}

func TestHostileUserEnumeration(t *testing.T) {
	d := start(t, "", "transaction", 2)
	check := hsBystander(t, d)
	failed := func(user string) string {
		return fmt.Sprintf("E FATAL 28P01 password authentication failed for user %q", user)
	}
	tests := []struct {
		name, user, database, password string
		want                           string
	}{
		{"wrong password", "app", "appdb", "nope", failed("app")},
		{"unknown user", "ghost", "appdb", "x", failed("ghost")},
		{"unknown user, unknown database", "ghost", "nodb", "x", failed("ghost")},
		{"known user, unknown database, wrong password", "app", "nodb", "nope", failed("app")},
		{"known user, unknown database, right password", "app", "nodb", "app-secret", "E FATAL 3D000 no such database: nodb"},
		{"admin console, unknown user", "ghost", "pgdoorman", "x", failed("ghost")},
		{"admin console, wrong password", "admin", "pgdoorman", "x", failed("admin")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			challenge, salt, iterations, last := hsLoginAttempt(t, d.Port, tt.user, tt.database, tt.password)
			require.Equal(t, "R 10", challenge, "every login is challenged with SCRAM")
			require.Equal(t, 4096, iterations)
			raw, err := base64.StdEncoding.DecodeString(salt)
			require.NoError(t, err)
			require.Len(t, raw, 16)
			require.Equal(t, tt.want, last)
			_, again, _, _ := hsLoginAttempt(t, d.Port, tt.user, tt.database, tt.password)
			require.Equal(t, salt, again, "the salt of a name does not change between attempts")
		})
	}
	_, ghost, _, _ := hsLoginAttempt(t, d.Port, "ghost", "appdb", "x")
	_, ghost2, _, _ := hsLoginAttempt(t, d.Port, "ghost2", "appdb", "x")
	require.NotEqual(t, ghost, ghost2, "mock salts differ between names")

	// PostgreSQL behaves the same way for a role that does not exist.
	_, pgSalt, pgIter, pgLast := hsLoginAttempt(t, pg.Port, "ghost", "appdb", "x")
	_, pgAgain, _, _ := hsLoginAttempt(t, pg.Port, "ghost", "appdb", "x")
	require.Equal(t, failed("ghost"), pgLast)
	require.Equal(t, 4096, pgIter)
	require.Equal(t, pgSalt, pgAgain)

	t.Run("counted by reason", func(t *testing.T) {
		for reason, atLeast := range map[string]float64{"password": 1, "no_user": 4, "no_database": 1, "admin": 2} {
			require.GreaterOrEqual(t, hsLoginFailures(t, d, reason), atLeast, reason)
		}
	})
	check()
}

func hsLoginFailures(t *testing.T, d *apptest.Instance, reason string) float64 {
	t.Helper()
	return counterValue(t, d, "pg_doorman_client_login_failures_total", "reason", reason)
}

func TestHostileUserEnumerationHBA(t *testing.T) {
	rules := `  pg_hba: |
    host all trusted_ghost 127.0.0.1/32 trust
    host all md5_ghost 127.0.0.1/32 md5
    host appdb app_md5 127.0.0.1/32 md5
    host all all 127.0.0.1/32 scram-sha-256`
	d := start(t, rules, "transaction", 2)
	check := hsBystander(t, d)

	// trust: no challenge, and PostgreSQL then says the role does not exist.
	challenge, _, _, _ := hsLoginAttempt(t, d.Port, "trusted_ghost", "appdb", "")
	require.Equal(t, `E FATAL 28000 role "trusted_ghost" does not exist`, challenge)

	// md5 rule, unknown user: a mock SCRAM exchange, as PostgreSQL does with
	// its default password_encryption.
	challenge, _, iterations, last := hsLoginAttempt(t, d.Port, "md5_ghost", "appdb", "x")
	require.Equal(t, "R 10", challenge)
	require.Equal(t, 4096, iterations)
	require.Equal(t, `E FATAL 28P01 password authentication failed for user "md5_ghost"`, last)

	// md5 rule, MD5 user: still the MD5 challenge.
	c := hsDial(t, d.Port)
	c.send(hsStartup(hsV30, "user", "app_md5", "database", "appdb").b)
	got, _ := c.message()
	require.Equal(t, "R 5", got)
	check()
}

func TestHostileLengths(t *testing.T) {
	d := start(t, "", "transaction", 2)
	check := hsBystander(t, d)
	startupHeader := func(length uint32) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, length), hsV30)
	}
	password := func(length uint32, body int) []byte {
		b := binary.BigEndian.AppendUint32([]byte{'p'}, length)
		return append(b, make([]byte, body)...)
	}
	const badStartup = "E FATAL 08P01 invalid length of startup packet"
	tests := []struct {
		name     string
		startup  []byte
		password []byte // sent after the SCRAM challenge
		want     []string
	}{
		{"startup length 3", []byte{0, 0, 0, 3}, nil, []string{badStartup, "EOF"}},
		{"startup length 7", startupHeader(7)[:8], nil, []string{badStartup, "EOF"}},
		{"startup length 10001", startupHeader(10001), nil, []string{badStartup, "EOF"}},
		{"password length 2", nil, password(2, 0), []string{"E FATAL 08P01 invalid message length", "EOF"}},
		{"password of 70 KB", nil, password(70000+4, 70000),
			[]string{"E FATAL 54000 message too long: 70004 bytes, limit 65535", "EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := hsDial(t, d.Port)
			var got []string
			if tt.startup != nil {
				c.send(tt.startup)
			} else {
				c.send(hsStartup(hsV30, "user", "app", "database", "appdb").b)
				challenge, _ := c.message()
				require.Equal(t, "R 10", challenge)
				c.send(tt.password)
			}
			for len(got) < len(tt.want) {
				m, _ := c.message()
				got = append(got, m)
			}
			require.Equal(t, tt.want, got)
		})
	}
	t.Run("admin command of 2 MB", func(t *testing.T) {
		ctx := context.Background()
		pc, err := pgconn.Connect(ctx, d.DSN("admin", "admin-secret", "pgdoorman"))
		require.NoError(t, err)
		hj, err := hijack(pc)
		require.NoError(t, err)
		c := &hsConn{t: t, nc: hj.Conn}
		t.Cleanup(func() { _ = hj.Conn.Close() })
		require.NoError(t, c.nc.SetDeadline(time.Now().Add(15*time.Second)))
		c.send(protocol.Query{String: "SHOW VERSION; --" + strings.Repeat("x", 2<<20)}.Encode(nil))
		got, _ := c.message()
		require.Equal(t, "E FATAL 54000 admin command too long: 2097173 bytes, limit 65536", got)
		end, _ := c.message()
		require.Equal(t, "EOF", end)

		// A command under the bound still works.
		ok, err := pgconn.Connect(ctx, d.DSN("admin", "admin-secret", "pgdoorman"))
		require.NoError(t, err)
		defer ok.Close(ctx)
		_, err = ok.Exec(ctx, "SHOW VERSION").ReadAll()
		require.NoError(t, err)
	})
	check()
}

func TestHostileCancelClosesCleanly(t *testing.T) {
	d := start(t, "", "transaction", 2) // tcp_so_linger is 0 by default
	check := hsBystander(t, d)
	cancelPacket := func(pid, secret uint32) []byte {
		return protocol.CancelRequest{ProcessID: pid, SecretKey: secret}.Encode(nil)
	}

	t.Run("unknown key", func(t *testing.T) {
		c := hsDial(t, d.Port)
		c.send(cancelPacket(1, 2))
		end, _ := c.message()
		require.Equal(t, "EOF", end, "a cancel connection ends with FIN, not a reset")
	})

	t.Run("running query", func(t *testing.T) {
		ctx := context.Background()
		pc, err := pgconn.Connect(ctx, d.DSN("app", "app-secret", "appdb"))
		require.NoError(t, err)
		defer pc.Close(ctx)
		done := make(chan error, 1)
		go func() { _, err := pc.Exec(ctx, "SELECT pg_sleep(30) /* hs */").ReadAll(); done <- err }()
		require.Eventually(t, func() bool {
			return pg.QueryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30) /* hs */' AND state = 'active'") == 1
		}, 10*time.Second, 10*time.Millisecond)
		c := hsDial(t, d.Port)
		c.send(cancelPacket(pc.PID(), binary.BigEndian.Uint32(pc.SecretKey())))
		end, _ := c.message()
		require.Equal(t, "EOF", end)
		select {
		case err := <-done:
			require.Equal(t, "57014", pgErr(t, err).Code)
		case <-time.After(10 * time.Second):
			t.Fatal("the cancel did not interrupt pg_sleep")
		}
	})

	t.Run("refused login", func(t *testing.T) {
		_, _, _, last := hsLoginAttempt(t, d.Port, "app", "appdb", "wrong")
		require.Equal(t, `E FATAL 28P01 password authentication failed for user "app"`, last) // then EOF, checked inside
	})
	check()
}

func TestHostileTooManyClientsClosesCleanly(t *testing.T) {
	d := start(t, "  max_connections: 1", "transaction", 2)
	check := hsBystander(t, d)
	got := hsTranscript(t, d.Port, hsStartup(hsV30, "user", "app", "database", "appdb"))
	require.Equal(t, []string{"E FATAL 53300 sorry, too many clients already", "EOF"}, got)
	c := hsDial(t, d.Port)
	c.send(protocol.CancelRequest{ProcessID: 1, SecretKey: 2}.Encode(nil))
	end, _ := c.message()
	require.Equal(t, "EOF", end)
	check()
}

func TestHostileNodePostgresCancel(t *testing.T) {
	node := nodeWithPG(t)
	d := start(t, "", "transaction", 2)
	check := hsBystander(t, d)
	got := runDriver(t, driverEnv(d.Port), node, "cancel.js")
	require.Equal(t, "ok node-postgres cancel 57014", got)
	check()
}

// TestHostilePipelinedLogin: a client that does not wait for the
// challenge (its SASLInitialResponse in the same write as its startup
// packet) is answered at once, not after a wait for bytes that came before
// the challenge was sent (writeAwait), and logs in.
func TestHostilePipelinedLogin(t *testing.T) {
	d := start(t, "", "transaction", 2)
	for i := 0; i < 20; i++ {
		c := hsDial(t, d.Port)
		require.NoError(t, c.nc.SetDeadline(time.Now().Add(5*time.Second)))
		cl := auth.NewSCRAMClientPassword("app-secret", nil)
		b := hsStartup(hsV30, "user", "app", "database", "appdb").b
		b = protocol.SASLInitialResponse{Mechanism: auth.SCRAMMechanism, Data: cl.ClientFirst()}.Encode(b)
		c.send(b)
		d1, _ := c.message()
		require.Equal(t, "R 10", d1)
		d2, body := c.message()
		require.Equal(t, "R 11", d2, "the pipelined answer is read without waiting for more")
		final, err := cl.ServerFirst(body[4:])
		require.NoError(t, err)
		c.send(protocol.SASLResponse{Data: final}.Encode(nil))
		d3, _ := c.message()
		require.Equal(t, "R 12", d3)
		d4, _ := c.message()
		require.Equal(t, "R 0", d4)
		require.NoError(t, c.nc.Close())
	}
}

// TestHostilePipelinedQueryAfterPassword: a client that sends its first
// query in the same write as its last login message (it does not wait for
// AuthenticationOk) has that query answered after the welcome: the bytes
// read along with the password are not lost when the session starts.
func TestHostilePipelinedQueryAfterPassword(t *testing.T) {
	d := start(t, `  pg_hba: |
    host appdb plain 127.0.0.1/32 trust
    host appdb app_md5 127.0.0.1/32 md5
    host all all 127.0.0.1/32 scram-sha-256`, "transaction", 2)
	// untilZ reads up to a ReadyForQuery, an error or the stream's end.
	untilZ := func(c *hsConn) []string {
		var got []string
		for len(got) < 30 {
			m, body := c.message()
			if m == "D" {
				m += " " + string(body[6:])
			}
			got = append(got, m)
			if m == "Z" || strings.HasPrefix(m, "E ") || len(m) > 1 && m[1] != ' ' {
				break
			}
		}
		return got
	}
	scram := func(password string, query []byte) func(*hsConn) {
		return func(c *hsConn) {
			cl := auth.NewSCRAMClientPassword(password, nil)
			c.send(protocol.SASLInitialResponse{Mechanism: auth.SCRAMMechanism, Data: cl.ClientFirst()}.Encode(nil))
			m, body := c.message()
			require.Equal(t, "R 11", m)
			final, err := cl.ServerFirst(body[4:])
			require.NoError(t, err)
			c.send(append(protocol.SASLResponse{Data: final}.Encode(nil), query...))
		}
	}
	query := protocol.Query{String: "select 40+2"}.Encode(nil)
	tests := []struct {
		name      string
		ssl       bool // an SSLRequest first (answered 'N')
		user, db  string
		challenge string // "": none, the query goes with the startup packet
		answer    func(*hsConn)
		welcome   string
		want      []string // prefixes of the answer's messages
	}{
		{"trust, the query with the startup packet", false, "plain", "appdb", "", func(c *hsConn) {}, "R 0", []string{"T", "D 42", "C", "Z"}},
		{"md5", false, "app_md5", "appdb", "R 5", func(c *hsConn) {}, "R 0", []string{"T", "D 42", "C", "Z"}},
		{"scram", false, "app", "appdb", "R 10", scram("app-secret", query), "R 12", []string{"T", "D 42", "C", "Z"}},
		{"scram after an SSLRequest", true, "app", "appdb", "R 10", scram("app-secret", query), "R 12", []string{"T", "D 42", "C", "Z"}},
		{"admin console", false, "admin", "pgdoorman", "R 10", scram("admin-secret", protocol.Query{String: "SHOW VERSION"}.Encode(nil)),
			"R 12", []string{"T", "D PgDoorman ", "C", "Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := hsDial(t, d.Port)
			if tt.ssl {
				c.send(hsSSL.b)
				require.Equal(t, "N", c.byteAnswer())
			}
			var body []byte
			if tt.challenge == "" {
				c.send(append(hsStartup(hsV30, "user", tt.user, "database", tt.db).b, query...))
			} else {
				c.send(hsStartup(hsV30, "user", tt.user, "database", tt.db).b)
				var m string
				m, body = c.message()
				require.Equal(t, tt.challenge, m)
			}
			if tt.challenge == "R 5" {
				var salt [4]byte
				copy(salt[:], body[4:8])
				resp := auth.MD5Response(auth.MD5Verifier("app_md5", "md5-secret"), salt)
				c.send(append(protocol.PasswordMessage{Password: resp}.Encode(nil), query...))
			}
			tt.answer(c)
			welcome := untilZ(c)
			require.Equal(t, tt.welcome, welcome[0])
			require.Equal(t, "Z", welcome[len(welcome)-1], "welcome: %v", welcome)
			got := untilZ(c)
			require.Len(t, got, len(tt.want), "answer: %v", got)
			for i, w := range tt.want {
				require.True(t, strings.HasPrefix(got[i], w), "answer: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHostileLoginTimeout: client_login_timeout ends a login that does not
// finish in time, wherever the client stalls: before its startup packet
// (closed), in the middle of it (closed) or in the SCRAM exchange (FATAL
// 08P01 client_login_timeout); each is counted as a timeout. A client that
// logged in in time is not affected by the deadline afterwards.
func TestHostileLoginTimeout(t *testing.T) {
	d := start(t, "  client_login_timeout: 400ms", "transaction", 2)
	check := hsBystander(t, d)
	start := hsLoginFailures(t, d, "timeout")
	ended := func(c *hsConn) (string, time.Duration) {
		t.Helper()
		t0 := time.Now()
		got, _ := c.message()
		return got, time.Since(t0)
	}

	t.Run("nothing sent", func(t *testing.T) {
		c := hsDial(t, d.Port)
		got, took := ended(c)
		require.Equal(t, "EOF", got)
		require.Less(t, took, 5*time.Second)
	})
	t.Run("half a startup packet", func(t *testing.T) {
		c := hsDial(t, d.Port)
		b := hsStartup(hsV30, "user", "app", "database", "appdb").b
		c.send(b[:len(b)/2])
		got, _ := ended(c)
		require.Equal(t, "EOF", got)
	})
	for _, tt := range []struct{ name, user, db string }{
		{"stalled in the SCRAM exchange", "app", "appdb"},
		{"stalled in the admin console's SCRAM exchange", "admin", "pgdoorman"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := hsDial(t, d.Port)
			c.send(hsStartup(hsV30, "user", tt.user, "database", tt.db).b)
			got, _ := c.message()
			require.Equal(t, "R 10", got[:4], "SASL offered: %s", got)
			got, _ = ended(c)
			require.Contains(t, got, "E FATAL 08P01 client_login_timeout")
			got, _ = c.message()
			require.Equal(t, "EOF", got)
		})
	}
	require.Equal(t, start+4, hsLoginFailures(t, d, "timeout"))

	// Logged in within the limit, then idle past it: still served.
	c := connect(t, d.DSN("app", "app-secret", "appdb"))
	time.Sleep(600 * time.Millisecond) // past the login deadline: what is asserted is that nothing happens
	var n int
	require.NoError(t, c.QueryRow(context.Background(), "SELECT 7").Scan(&n))
	require.Equal(t, 7, n)
	check()
	require.Equal(t, start+4, hsLoginFailures(t, d, "timeout"), "nothing else counted")
}
