package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/doorman-go/doorman/internal/auth"
	"github.com/doorman-go/doorman/internal/auth/hba"
	"github.com/doorman-go/doorman/internal/protocol"
)

// MaxAdminMessage bounds one admin console message including its length
// word. Admin commands are short; a longer one is answered with 54000.
const MaxAdminMessage = 64 << 10

// serveAdmin authenticates an admin console client with admin_username and
// admin_password (pg_hba applies here too) and hands it to Env.Admin. A
// login that runs out of client_login_timeout ends as a pool login's does
// (loginEnded).
func (s *Session) serveAdmin(ctx context.Context) error {
	s.Admin = true
	if err := s.promote(); err != nil { // the console runs in its goroutine
		return err
	}
	g := s.general()
	method := hba.MethodSCRAM
	if rules := s.env.HBA(); rules != nil {
		rule, ok := rules.Match(s.hbaRequest())
		if !ok || rule.Method == hba.MethodReject || rule.Method == hba.MethodUnknown {
			s.loginFailed("hba")
			s.noHBAEntry()
			return errors.New("admin rejected by hba")
		}
		method = rule.Method
	}
	var err error
	switch {
	case s.User != g.AdminUsername:
		// The same exchange as a wrong password: the admin name stays secret.
		s.authReason = "admin"
		_, err = s.authSCRAM(mockVerifier(mockSecret(), s.User), nil)
		if err == nil {
			err = fmt.Errorf("BUG: mock SCRAM exchange for %q succeeded", s.User)
		}
	case method == hba.MethodTrust:
	case method == hba.MethodMD5:
		err = s.authMD5(auth.MD5Verifier(g.AdminUsername, g.AdminPassword), nil)
	default:
		// A salt stable per process, like the mock one: a salt that
		// changed on every attempt would single the admin name out.
		salt := mockVerifier(mockSecret(), g.AdminUsername).Salt
		_, err = s.authSCRAM(auth.NewSCRAMVerifier(g.AdminPassword, salt, mockIterations), nil)
	}
	if err != nil {
		return s.loginEnded(err, true)
	}
	s.clientParams = map[string]string{
		"server_version": "15.0 (pg_doorman)", "server_encoding": "UTF8", "client_encoding": "UTF8",
		"DateStyle": "ISO, MDY", "integer_datetimes": "on", "standard_conforming_strings": "on",
		"application_name": s.AppName, "TimeZone": "UTC", "in_hot_standby": "off",
	}
	if err := s.welcome(); err != nil {
		return s.loginEnded(err, true)
	}
	_ = s.nc.SetDeadline(zeroTime)
	s.replaceReader(s.nc, MaxAdminMessage)
	if s.env.Admin == nil {
		return errors.New("admin console not available")
	}
	err = s.env.Admin(ctx, s)
	if errors.Is(err, protocol.ErrMessageTooLarge) || errors.Is(err, protocol.ErrInvalidLength) {
		s.lastWord.Store(true) // the console answered with a FATAL error
	}
	return err
}
