package session

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/clienttls"
)

// TLSMetrics is implemented by Env.Metrics hooks that count client TLS.
type TLSMetrics interface {
	// TLSHandshake counts a client TLS handshake; reason is "" when it
	// succeeded, else a clienttls.FailureReason.
	TLSHandshake(reason string)
	// SCRAMAuth counts a successful SCRAM exchange with a client by
	// mechanism: SCRAM-SHA-256 or SCRAM-SHA-256-PLUS.
	SCRAMAuth(mechanism string)
}

// tlsRecordHandshake is the first byte of a TLS ClientHello record: what a
// PostgreSQL 17 client with sslnegotiation=direct sends instead of an
// SSLRequest (whose first byte, of a length of 8, is 0).
const tlsRecordHandshake = 0x16

// peekDirectTLS reads the client's first byte when TLS is offered and
// reports whether the client starts a TLS handshake right away. Otherwise
// the byte is put back in front of the login's reader (s.crd), which reads
// the startup packet. It is read alone, so that a handshake finds every
// byte after it still on the socket.
func (s *Session) peekDirectTLS() (bool, error) {
	var b [1]byte
	if _, err := io.ReadFull(s.nc, b[:]); err != nil {
		return false, fmt.Errorf("read startup packet length: %w", err)
	}
	if b[0] == tlsRecordHandshake {
		return true, nil
	}
	s.crd.Prime(b[:])
	return false, nil
}

// byteReader yields one byte, then EOF.
type byteReader struct {
	b    byte
	done bool
}

func (r *byteReader) Read(p []byte) (int, error) {
	if r.done || len(p) == 0 {
		return 0, io.EOF
	}
	p[0], r.done = r.b, true
	return 1, nil
}

// replayConn is a connection whose first byte was already read: Read
// returns it first. The TLS handshake of a direct TLS client runs on it.
type replayConn struct {
	net.Conn
	first *byteReader
}

func (c *replayConn) Read(p []byte) (int, error) {
	if !c.first.done {
		return c.first.Read(p)
	}
	return c.Conn.Read(p)
}

// acceptSSLRequest answers an SSLRequest with 'S' and runs the handshake.
// Like refuseEncryption it refuses plaintext bytes sent before the answer.
func (s *Session) acceptSSLRequest(ctx context.Context) error {
	if err := s.waitHandshakeSlot(ctx); err != nil {
		return err
	}
	early := s.earlyInput()
	if _, err := s.nc.Write([]byte{'S'}); err != nil {
		return fmt.Errorf("accept SSL request: %w", err)
	}
	if early {
		s.loginFailed("protocol")
		s.fatal("08P01", "received unencrypted data after SSL request")
		return errors.New("received unencrypted data after SSL request")
	}
	if err := s.promote(); err != nil { // a TLS session runs in its goroutine
		return err
	}
	return s.handshake(ctx, s.raw, false)
}

// acceptDirectTLS runs the handshake of a client that began with a
// ClientHello (PostgreSQL 17 sslnegotiation=direct). Without ALPN
// "postgresql" the client is refused, as PostgreSQL 17 does.
func (s *Session) acceptDirectTLS(ctx context.Context) error {
	if err := s.waitHandshakeSlot(ctx); err != nil {
		return err
	}
	if err := s.promote(); err != nil { // a TLS session runs in its goroutine
		return err
	}
	conn := &replayConn{Conn: s.raw, first: &byteReader{b: tlsRecordHandshake}}
	return s.handshake(ctx, conn, true)
}

// waitHandshakeSlot queues the client for tls_rate_limit_per_second,
// until the login deadline at most.
func (s *Session) waitHandshakeSlot(ctx context.Context) error {
	ctx, cancel := s.loginContext(ctx)
	defer cancel()
	if err := s.env.TLS.Wait(ctx); err != nil {
		s.tlsCount("queue_timeout")
		s.loginFailed("tls")
		return fmt.Errorf("tls handshake queue: %w: %w", errLoginCounted, err)
	}
	return nil
}

// handshake runs TLS on conn and makes the TLS connection the session's
// socket; s.raw stays the TCP connection under it.
func (s *Session) handshake(ctx context.Context, conn net.Conn, direct bool) error {
	ctx, cancel := s.loginContext(ctx)
	defer cancel()
	tc, m, err := s.env.TLS.Handshake(ctx, conn)
	if err != nil {
		reason := clienttls.FailureReason(err)
		s.tlsCount(reason)
		s.loginFailed("tls")
		s.logger().Debug("client TLS handshake failed", zap.Stringer("addr", s.RemoteAddr), zap.Bool("direct", direct),
			zap.String("reason", reason), zap.Error(err))
		return fmt.Errorf("%w: %w", errLoginCounted, err)
	}
	st := tc.ConnectionState()
	s.nc = tc
	if direct && st.NegotiatedProtocol != clienttls.ALPN {
		s.tlsCount("no_alpn")
		s.loginFailed("tls")
		s.fatal("08P01", "received direct SSL connection request without ALPN protocol negotiation extension")
		return errors.New("direct TLS without ALPN")
	}
	s.tlsCount("")
	t := &tlsState{material: m, info: clienttls.ConnInfo(st)}
	if len(st.PeerCertificates) > 0 {
		t.peer = st.PeerCertificates[0].Subject.String()
	}
	s.tls = t
	return nil
}

// tlsState is what the TLS handshake of a client leaves for the session.
type tlsState struct {
	material *clienttls.Material // the certificate the client was shown
	info     string              // SHOW CLIENTS tls column
	peer     string              // subject of the client certificate, if any
}

// TLS is the client connection's TLS state as SHOW CLIENTS shows it
// ("TLSv1.3/TLS_AES_128_GCM_SHA256/ECDH=X25519"), "" in plaintext.
func (s *Session) TLS() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.info
}

// tlsPeer is the subject of the client certificate, "" without one.
func (s *Session) tlsPeer() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.peer
}

func (s *Session) tlsCount(reason string) {
	if m, ok := s.env.Metrics.(TLSMetrics); ok {
		m.TLSHandshake(reason)
	}
}

// closeTLSWrite ends the TLS stream with close_notify before a graceful
// close of the socket under it.
func (s *Session) closeTLSWrite() {
	if tc, ok := s.nc.(*tls.Conn); ok {
		_ = tc.SetWriteDeadline(time.Now().Add(time.Second))
		_ = tc.CloseWrite()
	}
}
