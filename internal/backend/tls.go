package backend

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/servertls"
)

// TLSObserver hears of server-side TLS: handshakes, their failures by
// servertls reason, and encrypted connections opened and closed. It must
// be safe for concurrent use.
type TLSObserver interface {
	TLSHandshakeDone(d time.Duration)
	TLSHandshakeFailed(reason string)
	TLSConnOpened()
	TLSConnClosed()
}

// TLSError is a failure to set up TLS with the server: it refused
// SSLRequest while server_tls_mode requires TLS, or the handshake failed.
type TLSError struct {
	Addr   string
	Mode   servertls.Mode
	Reason string // a servertls.Reason* value
	Err    error
}

func (e *TLSError) Error() string {
	return fmt.Sprintf("tls to %s (server_tls_mode %s): %v", e.Addr, e.Mode, e.Err)
}
func (e *TLSError) Unwrap() error { return e.Err }

func tlsFailure(o Options, mode servertls.Mode, reason string, err error) error {
	if o.TLSObserver != nil {
		o.TLSObserver.TLSHandshakeFailed(reason)
	}
	return &TLSError{Addr: o.Address, Mode: mode, Reason: reason, Err: err}
}

// negotiateTLS sends SSLRequest when the attempt asks for TLS and wraps
// c.nc in a tls.Conn when the server agrees.
func (c *Conn) negotiateTLS(o Options, m *servertls.Material, at servertls.Attempt) error {
	if at == servertls.Plain {
		return nil
	}
	fail := func(reason string, err error) error { return tlsFailure(o, m.Mode, reason, err) }
	if _, err := c.nc.Write(protocol.SSLRequest{}.Encode(nil)); err != nil {
		return &ConnectError{Addr: o.Address, Err: fmt.Errorf("send SSLRequest: %w", err)}
	}
	// One byte, read unbuffered: anything after it belongs to TLS (a
	// server that sends more is answered by the handshake failing).
	var b [1]byte
	if _, err := io.ReadFull(c.nc, b[:]); err != nil {
		return &ConnectError{Addr: o.Address, Err: fmt.Errorf("read SSLRequest reply: %w", err)}
	}
	switch b[0] {
	case 'S':
	case 'N':
		if at == servertls.TLSIfOffered {
			return nil
		}
		return fail(servertls.ReasonRefused, fmt.Errorf("the server does not accept TLS (answered SSLRequest with N; is ssl = on in postgresql.conf?)"))
	case protocol.MsgErrorResponse:
		// A server older than 7.0 or one refusing the request outright.
		return fail(servertls.ReasonRefused, fmt.Errorf("the server answered SSLRequest with an ErrorResponse"))
	default:
		return fail(servertls.ReasonHandshake, fmt.Errorf("unexpected reply %q to SSLRequest", b[0]))
	}
	host, _, err := net.SplitHostPort(o.Address)
	if err != nil {
		host = o.Address
	}
	start := time.Now()
	tc := tls.Client(c.nc, m.Config(host))
	if err := tc.Handshake(); err != nil {
		return fail(servertls.Reason(err), err)
	}
	if o.TLSObserver != nil {
		o.TLSObserver.TLSHandshakeDone(time.Since(start))
	}
	c.nc = tc
	c.TLS = servertls.Describe(tc.ConnectionState())
	return nil
}
