package backend

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/doorman-go/doorman/internal/auth"
	"github.com/doorman-go/doorman/internal/prepared"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
	"github.com/doorman-go/doorman/internal/servertls"
	"github.com/doorman-go/doorman/internal/sockopt"
)

// MaxServerMessage bounds one message from PostgreSQL (1 GiB, PostgreSQL's
// own limit for a field plus slack).
const MaxServerMessage = 1<<30 + 1<<20

// Credentials are what the pooler can prove to the server. At most one of
// Password, MD5 or the SCRAM keys is normally set; all empty means trust.
type Credentials struct {
	User     string
	Password string // plaintext server_password
	MD5      string // "md5..." verifier: pass-the-hash
	// SCRAM passthrough: the ClientKey recovered from a client's proof and
	// the ServerKey of the same verifier.
	SCRAMClientKey []byte
	SCRAMServerKey []byte
}

// Options describe one server to connect to.
type Options struct {
	Network        string // "unix" or "tcp"
	Address        string // socket path or host:port
	Database       string
	Params         [][2]string // extra startup parameters, e.g. application_name
	Credentials    Credentials
	ConnectTimeout time.Duration
	KeepAlive      time.Duration // idle time before the first probe (tcp_keepalives_idle); 0: Go's default
	KeepAliveIntvl time.Duration // between probes (tcp_keepalives_interval)
	KeepAliveCount int           // unanswered probes before the connection is dead (tcp_keepalives_count)
	TCPUserTimeout time.Duration
	NoDelay        bool
	// UnixSocketBufferSize sets SO_RCVBUF/SO_SNDBUF of a unix socket.
	UnixSocketBufferSize int
	// TLS is server_tls_*; nil means disable. Unix sockets never use TLS.
	TLS *servertls.Material
	// TLSObserver, if set, hears of TLS handshakes and connections.
	TLSObserver TLSObserver
}

// Conn is one authenticated server connection.
type Conn struct {
	nc  net.Conn // the socket, or the tls.Conn over it
	raw net.Conn // the socket itself
	fd  int      // raw's descriptor, -1 when unknown
	// TLS is "TLSv1.3/<cipher>" for an encrypted connection, "" otherwise.
	TLS    string
	closed atomic.Bool
	tlsObs TLSObserver
	Reader *protocol.Reader
	PID    uint32
	Secret uint32
	Params map[string]string // latest ParameterStatus values
	// ParamsGen counts the ParameterStatus values recorded in Params, so
	// that a user can tell they have not changed since it last looked.
	ParamsGen uint64
	// ParamsMark is the session package's: what it last found in sync
	// with Params (see there). Written and read by the connection's holder.
	ParamsMark ParamsMark
	Network    string
	Address    string

	// Session state the pooler must undo before another client uses this
	// connection; set by the session from command tags.
	DirtySet, DirtyPrepare, DirtyCursor bool
	// Broken marks a connection that must be destroyed, not released.
	Broken bool
	// TxStatus is the status of the last ReadyForQuery.
	TxStatus byte
	// Prepared is the set of pooler-named statements prepared here.
	// Guarded by the owner of the connection.
	Prepared *prepared.ServerSet
	// Lifetime overrides server_lifetime for this connection (0 = no):
	// fallback connections live fallback_lifetime.
	Lifetime time.Duration
}

// MaxLifetime is how the pool learns of a per-connection lifetime.
func (c *Conn) MaxLifetime() time.Duration { return c.Lifetime }

// Address builds the network and address for a pool's server_host and
// server_port: a host starting with '/' is a unix socket directory.
func Address(host string, port int) (network, address string) {
	if strings.HasPrefix(host, "/") {
		return "unix", fmt.Sprintf("%s/.s.PGSQL.%d", strings.TrimRight(host, "/"), port)
	}
	return "tcp", net.JoinHostPort(host, fmt.Sprint(port))
}

// Descriptor is the socket's descriptor as it was dialled, -1 when not
// known: a key for whoever holds the connection (the transaction core finds
// its state of a server by it), never a descriptor to close.
func (c *Conn) Descriptor() int {
	if c.raw == nil {
		return -1
	}
	return c.fd
}

// NetConn exposes the socket for forwarding.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Write writes raw protocol bytes to the server.
func (c *Conn) Write(b []byte) (int, error) { return c.nc.Write(b) }

// WriteAwaitRead writes a request whose answer the caller reads next, and
// returns once the server has sent something (rawio.Conn.WriteAwaitRead),
// so that the read finds it without a call that finds nothing first. A
// connection with bytes already buffered, or under TLS, just writes.
func (c *Conn) WriteAwaitRead(b []byte) (int, error) {
	if rc, ok := c.nc.(*rawio.Conn); ok && c.Reader.Buffered() == 0 {
		return rc.WriteAwaitRead(b)
	}
	return c.nc.Write(b)
}

// Abort closes the socket at once, without Terminate or a TLS
// close_notify: for a connection found broken, whose owner then destroys
// it (Close after Abort is harmless).
func (c *Conn) Abort() error { return c.raw.Close() }

// Close sends Terminate and closes the socket. It is safe to call twice.
func (c *Conn) Close() error {
	if c.TLS != "" && c.tlsObs != nil && c.closed.CompareAndSwap(false, true) {
		c.tlsObs.TLSConnClosed()
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.nc.Write([]byte{protocol.MsgTerminate, 0, 0, 0, 4})
	// The raw socket, also under TLS: after Terminate the server needs no
	// close_notify, and tls.Conn.Close would wait up to 5 s to send one.
	return c.raw.Close()
}

// Connect opens and authenticates a server connection, trying what
// server_tls_mode asks for in libpq's order (servertls.Plan).
func Connect(ctx context.Context, o Options) (*Conn, error) {
	if o.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.ConnectTimeout)
		defer cancel()
	}
	m := o.TLS
	if m == nil {
		m = servertls.FromMode(servertls.Disable)
	}
	steps := servertls.Plan(m.Mode, o.Network == "unix")
	var first error
	for i, st := range steps {
		c, err := connectOnce(ctx, o, m, st.Attempt)
		switch {
		case err == nil:
			return c, nil
		case first != nil:
			// Both attempts failed: the first error leads (errors.As finds
			// its ServerError: the session's text, fallback's verdict).
			return nil, errors.Join(first, err)
		case i == len(steps)-1 || ctx.Err() != nil || !retryable(st, err):
			return nil, err
		}
		first = err
	}
	panic("BUG: backend: empty connect plan")
}

// retryable reports whether err of step st lets the next step run: a
// server whose pg_hba refused this encryption (28000, "no pg_hba.conf
// entry ... no encryption" or "rejects connection"), or a failed handshake
// (prefer). libpq retries on any startup error; a wrong password (28P01),
// too many connections or a server shutting down would fail the same way
// again, so they are not retried.
func retryable(st servertls.Step, err error) bool {
	var se *ServerError
	if st.RetryOnServerError && errors.As(err, &se) && se.Code == "28000" {
		var ue *unencryptedError
		return st.Attempt == servertls.Plain || !errors.As(err, &ue)
	}
	var te *TLSError
	return st.RetryOnHandshake && errors.As(err, &te)
}

// unencryptedError marks a ServerError on a TLSIfOffered attempt that went
// on in plaintext: retrying in plaintext would not change anything.
type unencryptedError struct{ error }

func (e *unencryptedError) Unwrap() error { return e.error }

func connectOnce(ctx context.Context, o Options, m *servertls.Material, at servertls.Attempt) (*Conn, error) {
	d := net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: o.KeepAlive, Interval: o.KeepAliveIntvl, Count: o.KeepAliveCount}}
	nc, err := d.DialContext(ctx, o.Network, o.Address)
	if err != nil {
		return nil, &ConnectError{Addr: o.Address, Err: err}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		if !o.NoDelay { // Go's dialer has turned TCP_NODELAY on already
			_ = tc.SetNoDelay(false)
		}
		_ = sockopt.SetUserTimeout(tc, o.TCPUserTimeout) // config refuses it where there is no such option
	}
	if uc, ok := nc.(*net.UnixConn); ok && o.UnixSocketBufferSize > 0 {
		_ = uc.SetReadBuffer(o.UnixSocketBufferSize)
		_ = uc.SetWriteBuffer(o.UnixSocketBufferSize)
	}
	c := &Conn{nc: rawio.Wrap(nc), raw: nc, fd: -1, Params: map[string]string{}, Network: o.Network, Address: o.Address}
	_ = rawio.Control(nc, func(fd uintptr) { c.fd = int(fd) })
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	err = c.negotiateTLS(o, m, at)
	if err == nil {
		c.Reader = protocol.NewReader(c.nc, 8192, MaxServerMessage)
		err = c.startup(o)
		var se *ServerError
		if at == servertls.TLSIfOffered && c.TLS == "" && errors.As(err, &se) {
			err = &unencryptedError{err}
		}
	}
	if !stop() || ctx.Err() != nil {
		if err == nil {
			err = ctx.Err()
		}
	}
	if err != nil {
		_ = nc.Close()
		if ctx.Err() != nil && !errors.As(err, new(*ServerError)) {
			return nil, &ConnectError{Addr: o.Address, Err: fmt.Errorf("%w: %w", ctx.Err(), err)}
		}
		return nil, err
	}
	_ = c.nc.SetDeadline(time.Time{})
	if c.TLS != "" && o.TLSObserver != nil {
		c.tlsObs = o.TLSObserver
		o.TLSObserver.TLSConnOpened()
	}
	return c, nil
}

func (c *Conn) startup(o Options) error {
	sm := protocol.StartupMessage{ProtocolVersion: protocol.ProtocolVersion3, Parameters: map[string]string{}}
	add := func(k, v string) {
		if _, ok := sm.Parameters[k]; !ok && v != "" {
			sm.Parameters[k] = v
			sm.Order = append(sm.Order, k)
		}
	}
	add("user", o.Credentials.User)
	add("database", o.Database)
	for _, p := range o.Params {
		add(p[0], p[1])
	}
	if _, err := c.nc.Write(sm.Encode(nil)); err != nil {
		if c.TLS != "" {
			// TLS 1.3: a server that rejected our certificate may have
			// closed before this write; its alert is still to be read.
			if _, rerr := c.Reader.Next(); rerr != nil && servertls.Reason(rerr) == servertls.ReasonAlert {
				return tlsFailure(o, o.TLS.Mode, servertls.ReasonAlert, fmt.Errorf("server rejected the TLS session (client certificate?): %w", rerr))
			}
		}
		return &ConnectError{Addr: o.Address, Err: fmt.Errorf("send startup: %w", err)}
	}
	a := authenticator{cred: o.Credentials}
	for {
		f, err := c.Reader.Next()
		if err != nil {
			if c.TLS != "" && servertls.Reason(err) == servertls.ReasonAlert {
				// TLS 1.3: the server checks our certificate after our
				// side of the handshake is done, and says so here.
				return tlsFailure(o, o.TLS.Mode, servertls.ReasonAlert, fmt.Errorf("server rejected the TLS session (client certificate?): %w", err))
			}
			return &ConnectError{Addr: o.Address, Err: fmt.Errorf("read startup reply: %w", err)}
		}
		switch f.Type() {
		case protocol.MsgAuthentication:
			reply, err := a.step(f.Body())
			if err != nil {
				return fmt.Errorf("authenticate to %s as %q: %w", o.Address, o.Credentials.User, err)
			}
			if reply != nil {
				if _, err := c.nc.Write(reply); err != nil {
					return &ConnectError{Addr: o.Address, Err: fmt.Errorf("send auth reply: %w", err)}
				}
			}
		case protocol.MsgParameterStatus:
			var ps protocol.ParameterStatus
			if err := ps.Decode(f.Body()); err != nil {
				return fmt.Errorf("server %s: %w", o.Address, err)
			}
			c.setParam(ps.Name, ps.Value)
		case protocol.MsgBackendKeyData:
			var k protocol.BackendKeyData
			if err := k.Decode(f.Body()); err != nil {
				return fmt.Errorf("server %s: %w", o.Address, err)
			}
			c.PID, c.Secret = k.ProcessID, k.SecretKey
		case protocol.MsgReadyForQuery:
			if !a.done {
				return fmt.Errorf("server %s: ReadyForQuery before authentication", o.Address)
			}
			c.TxStatus = protocol.ReadyForQueryStatus(f)
			return nil
		case protocol.MsgErrorResponse:
			n := &protocol.Notice{}
			if err := n.Decode(f.Body()); err != nil {
				return fmt.Errorf("server %s: %w", o.Address, err)
			}
			return &ServerError{Notice: *n}
		case protocol.MsgNoticeResponse, protocol.MsgNegotiateProtocolVersion:
		default:
			return fmt.Errorf("server %s: unexpected message %q during startup", o.Address, f.Type())
		}
	}
}

// authenticator answers the server's authentication requests.
type authenticator struct {
	cred  Credentials
	scram *auth.SCRAMClient
	done  bool
}

func (a *authenticator) step(body []byte) ([]byte, error) {
	m, err := protocol.DecodeAuthentication(body)
	if err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case *protocol.AuthenticationOk:
		a.done = true
		return nil, nil
	case *protocol.AuthenticationCleartextPassword:
		if a.cred.Password == "" {
			return nil, errors.New("server asks for a cleartext password and no server_password is configured")
		}
		return protocol.PasswordMessage{Password: a.cred.Password}.Encode(nil), nil
	case *protocol.AuthenticationMD5Password:
		verifier := a.cred.MD5
		if a.cred.Password != "" {
			verifier = auth.MD5Verifier(a.cred.User, a.cred.Password)
		}
		if verifier == "" {
			return nil, errors.New("server asks for md5 and the pool has no md5 hash or password for this user")
		}
		return protocol.PasswordMessage{Password: auth.MD5Response(verifier, m.Salt)}.Encode(nil), nil
	case *protocol.AuthenticationSASL:
		if !contains(m.Mechanisms, auth.SCRAMMechanism) {
			return nil, fmt.Errorf("server offers SASL mechanisms %v, only %s is supported", m.Mechanisms, auth.SCRAMMechanism)
		}
		switch {
		case a.cred.Password != "":
			a.scram = auth.NewSCRAMClientPassword(a.cred.Password, rand.Reader)
		case a.cred.SCRAMClientKey != nil:
			a.scram = auth.NewSCRAMClientKeys(a.cred.SCRAMClientKey, a.cred.SCRAMServerKey, rand.Reader)
		default:
			return nil, ErrNoSCRAMKey
		}
		return protocol.SASLInitialResponse{Mechanism: auth.SCRAMMechanism, Data: a.scram.ClientFirst()}.Encode(nil), nil
	case *protocol.AuthenticationSASLContinue:
		if a.scram == nil {
			return nil, errors.New("SASLContinue without SASL")
		}
		final, err := a.scram.ServerFirst(m.Data)
		if err != nil {
			return nil, err
		}
		return protocol.SASLResponse{Data: final}.Encode(nil), nil
	case *protocol.AuthenticationSASLFinal:
		if a.scram == nil {
			return nil, errors.New("SASLFinal without SASL")
		}
		return nil, a.scram.ServerFinal(m.Data)
	default:
		return nil, fmt.Errorf("unsupported authentication request %T", m)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Alive reports, without blocking, whether the server side of an idle
// connection is still open: a peek that finds EOF or unexpected bytes (a
// FATAL sent before the server went away) means it is not.
func (c *Conn) Alive() bool {
	switch rawio.PeekVia(c.nc, c.raw) {
	case rawio.PeekEmpty, rawio.PeekUnknown:
		return true
	}
	return false
}
