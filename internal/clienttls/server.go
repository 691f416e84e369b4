package clienttls

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
)

// Modes of general.tls_mode.
const (
	ModeDisable    = "disable"
	ModeAllow      = "allow"
	ModeRequire    = "require"
	ModeVerifyFull = "verify-full"
)

// Server is the client-side TLS of one pg_doorman: the mode, fixed at
// start, and the material in force, swapped by Reload.
type Server struct {
	mode    string
	mat     atomic.Pointer[Material]
	limiter *Limiter // nil: no tls_rate_limit_per_second
}

// NewServer loads the material for mode. With mode disable, or allow
// without a certificate, it returns a Server that offers no TLS.
func NewServer(mode string, f Files, ratePerSecond int) (*Server, error) {
	s := &Server{mode: mode}
	if ratePerSecond > 0 {
		s.limiter = NewLimiter(ratePerSecond, nil)
	}
	if mode == ModeDisable || f.Cert == "" {
		if mode == ModeRequire || mode == ModeVerifyFull {
			return nil, fmt.Errorf("tls_mode %s needs tls_certificate and tls_private_key", mode)
		}
		return s, nil
	}
	m, err := Load(f, mode == ModeVerifyFull)
	if err != nil {
		return nil, err
	}
	s.mat.Store(m)
	return s, nil
}

// Mode is tls_mode as configured.
func (s *Server) Mode() string { return s.mode }

// Enabled reports whether clients may negotiate TLS.
func (s *Server) Enabled() bool { return s != nil && s.mat.Load() != nil }

// Required reports whether a plaintext client must be refused.
func (s *Server) Required() bool {
	return s != nil && (s.mode == ModeRequire || s.mode == ModeVerifyFull)
}

// Material is the material in force, nil when TLS is off.
func (s *Server) Material() *Material { return s.mat.Load() }

// Reload loads the files again (SIGHUP). On error the old material stays.
// It changes nothing when TLS is off: the mode and whether TLS is offered
// at all are fixed at start.
func (s *Server) Reload(f Files) (*Material, error) {
	if s.mat.Load() == nil {
		return nil, nil
	}
	if f.Cert == "" {
		return nil, errors.New("tls_certificate removed: client TLS stays on until a restart")
	}
	m, err := Load(f, s.mode == ModeVerifyFull)
	if err != nil {
		return nil, err
	}
	s.mat.Store(m)
	return m, nil
}

// Wait queues the caller for a handshake slot (tls_rate_limit_per_second).
func (s *Server) Wait(ctx context.Context) error {
	if s.limiter == nil {
		return nil
	}
	return s.limiter.Wait(ctx)
}

// Handshake runs the server side of a TLS handshake on raw with the
// material in force, within ctx. It returns the connection and the
// material it used, even on error (for the caller to close).
func (s *Server) Handshake(ctx context.Context, raw net.Conn) (*tls.Conn, *Material, error) {
	m := s.mat.Load()
	if m == nil {
		return nil, nil, errors.New("BUG: TLS handshake without TLS material")
	}
	tc := tls.Server(raw, m.config)
	if err := tc.HandshakeContext(ctx); err != nil {
		return tc, m, fmt.Errorf("tls handshake: %w", err)
	}
	return tc, m, nil
}

// FailureReason classifies a failed handshake for
// pg_doorman_tls_handshake_failures_total.
func FailureReason(err error) string {
	var (
		rh  tls.RecordHeaderError
		cve *tls.CertificateVerificationError
		ne  net.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &rh):
		return "not_tls"
	case errors.As(err, &cve):
		return "bad_client_certificate"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		return "client_closed"
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "didn't provide a certificate"):
		return "no_client_certificate"
	case strings.Contains(msg, "protocol version"), strings.Contains(msg, "unsupported versions"):
		return "protocol_version"
	case strings.Contains(msg, "cipher suite"):
		return "no_shared_cipher"
	case strings.Contains(msg, "application protocol"):
		return "alpn"
	case strings.Contains(msg, "remote error"):
		return "client_alert"
	}
	return "other"
}
