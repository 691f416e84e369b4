package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
)

// readStartup handles SSLRequest (TLS when configured, else 'N'),
// GSSENCRequest ('N'), a direct TLS ClientHello (when TLS is configured),
// CancelRequest (forwarded, returns nil message) and StartupMessage. Like
// PostgreSQL's ProcessStartupPacket it accepts at most one SSLRequest and
// one GSSENCRequest, none after TLS is up: a repeated one is read as a
// startup packet of protocol 1234.5679 (or 1234.5680) and refused as an
// unsupported version; bytes sent before the answer to one are a protocol
// violation (08P01). With tls_mode require or verify-full a plaintext
// StartupMessage is refused ("SSL required", as PgBouncer says it); a
// plaintext CancelRequest is still forwarded (libpq sends them so).
//
// The packets are read through the login's reader (s.crd): a packet and what
// the client sent along with it take one read, and those bytes are the
// next packet's or the first login message's.
func (s *Session) readStartup(ctx context.Context) (*protocol.StartupMessage, error) {
	var sslDone, gssDone bool
	tlsOn := s.env.TLS.Enabled() && !s.Local
	s.crd = protocol.NewReader(s.nc, 0, MaxAuthMessage)
	for first := true; ; first = false {
		if first && tlsOn {
			direct, err := s.peekDirectTLS()
			if err != nil {
				return nil, err
			}
			if direct {
				if err := s.acceptDirectTLS(ctx); err != nil {
					return nil, err
				}
				s.crd.Reset(s.nc)
				sslDone, gssDone = true, true
				continue
			}
		}
		payload, err := s.crd.NextStartup(0)
		if err != nil {
			if errors.Is(err, protocol.ErrInvalidLength) || errors.Is(err, protocol.ErrMessageTooLarge) {
				s.loginFailed("protocol")
				s.fatal("08P01", "invalid length of startup packet")
			}
			return nil, fmt.Errorf("read startup packet: %w", err)
		}
		m, err := protocol.DecodeStartup(payload)
		if err == nil {
			switch m.(type) {
			case *protocol.SSLRequest:
				err = repeatedRequest(sslDone, protocol.SSLRequestCode)
				sslDone = true
			case *protocol.GSSENCRequest:
				err = repeatedRequest(gssDone, protocol.GSSENCRequestCode)
				gssDone = true
			}
		}
		if err != nil {
			s.startupRefused(err)
			return nil, fmt.Errorf("decode startup packet: %w", err)
		}
		switch m := m.(type) {
		case *protocol.SSLRequest:
			if !tlsOn {
				if err := s.refuseEncryption(m); err != nil {
					return nil, err
				}
				continue
			}
			if err := s.acceptSSLRequest(ctx); err != nil {
				return nil, err
			}
			s.crd.Reset(s.nc) // nothing was buffered: acceptSSLRequest refuses that
			gssDone = true    // as PostgreSQL: no GSSENCRequest inside TLS
		case *protocol.GSSENCRequest:
			if err := s.refuseEncryption(m); err != nil {
				return nil, err
			}
		case *protocol.CancelRequest:
			s.countConnection("cancel")
			s.forwardCancel(ctx, m)
			return nil, nil
		case *protocol.StartupMessage:
			if s.tls == nil && s.env.TLS.Required() && !s.Local {
				s.countConnection("plain")
				s.loginFailed("tls_required")
				s.fatal("08P01", "SSL required")
				return nil, errors.New("plaintext client refused: SSL required")
			}
			s.countConnection(s.connKind())
			if nv, ok := m.ProtocolNegotiation(); ok {
				if err := s.Write(nv.Encode(nil)); err != nil {
					return nil, fmt.Errorf("negotiate protocol version: %w", err)
				}
			}
			return m, nil
		}
	}
}

// connKind is the type label of pg_doorman_connection_count for a client
// that sent its StartupMessage.
func (s *Session) connKind() string {
	if s.tls != nil {
		return "tls"
	}
	return "plain"
}

// refuseEncryption answers an SSLRequest or GSSENCRequest with 'N'. Bytes
// that arrived before the answer were sent without waiting for it (were
// encryption accepted, plaintext a man in the middle could have injected):
// PostgreSQL refuses them after its answer, and so do we.
func (s *Session) refuseEncryption(m any) error {
	early := s.earlyInput()
	if _, err := s.nc.Write([]byte{'N'}); err != nil {
		return fmt.Errorf("refuse encryption: %w", err)
	}
	if !early {
		return nil
	}
	msg := "received unencrypted data after SSL request"
	if _, gss := m.(*protocol.GSSENCRequest); gss {
		msg = "received unencrypted data after GSSAPI encryption request"
	}
	s.loginFailed("protocol")
	s.fatal("08P01", msg)
	return errors.New(msg)
}

// repeatedRequest is the error PostgreSQL gives a second SSLRequest or
// GSSENCRequest: their codes are then taken as a protocol version.
func repeatedRequest(done bool, code uint32) error {
	if !done {
		return nil
	}
	return &protocol.UnsupportedProtocolError{Major: uint16(code >> 16), Minor: uint16(code)}
}

// startupRefused answers an undecodable or refused startup packet.
func (s *Session) startupRefused(err error) {
	code, msg := "08P01", "invalid startup packet layout"
	var upe *protocol.UnsupportedProtocolError
	switch {
	case errors.As(err, &upe):
		code, msg = upe.SQLState(), upe.Error()
	case errors.Is(err, protocol.ErrNoUser):
		code, msg = "28000", protocol.ErrNoUser.Error()
	}
	s.loginFailed("protocol")
	s.fatal(code, msg)
}

// RejectStartup answers a client that cannot be admitted: it refuses
// encryption requests with 'N', reads the startup packet and sends a FATAL
// error, then closes.
func RejectStartup(nc net.Conn, code, msg string) {
	defer closeGracefully(nc)
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
read:
	for i := 0; i < 3; i++ {
		payload, err := protocol.ReadStartup(nc, 0)
		if err != nil {
			return
		}
		m, err := protocol.DecodeStartup(payload)
		if err != nil {
			return
		}
		switch m.(type) {
		case *protocol.SSLRequest, *protocol.GSSENCRequest:
			if _, err := nc.Write([]byte{'N'}); err != nil {
				return
			}
			continue
		case *protocol.CancelRequest:
			return
		}
		break read
	}
	_, _ = nc.Write(protocol.AppendError(nil, "FATAL", code, msg))
}

// earlyInput reports whether the client has sent bytes after its
// SSLRequest or GSSENCRequest that were not asked for yet: bytes the login's
// reader read along with the request (what PostgreSQL's
// pq_buffer_has_data checks), or bytes in the kernel's receive queue
// (TIOCINQ; off Linux never, and those bytes are read as the next packet).
func (s *Session) earlyInput() bool {
	return s.crd.Buffered() > 0 || rawio.InputQueued(s.raw) > 0
}
