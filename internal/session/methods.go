package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/auth"
	"github.com/doorman-go/doorman/internal/auth/hba"
	"github.com/doorman-go/doorman/internal/auth/pam"
	"github.com/doorman-go/doorman/internal/auth/token"
	"github.com/doorman-go/doorman/internal/config"
	"github.com/doorman-go/doorman/internal/protocol"
)

// credMethod is how a client proves who it is (seed 002, "Порядок выбора
// метода").
type credMethod int

const (
	credTrust credMethod = iota // pg_hba trust: no check
	credPAM                     // cleartext password checked by PAM
	credSCRAM                   // SCRAM-SHA-256 (also the mock exchange for a missing secret)
	credMD5                     // MD5 challenge
	credJWT                     // cleartext password checked as an RS256 JWT
)

var credNames = [...]string{"trust", "pam", "scram-sha-256", "md5", "jwt"}

func (m credMethod) String() string { return credNames[m] }

// TalosUser is the user name that selects Talos authentication.
const TalosUser = "talos"

// chooseMethod is the seed's order after pg_hba for a pool user (Talos,
// first of all, is decided before the user is looked up): HBA trust, then
// PAM when the user has auth_pam_service, then the password's format:
// SCRAM-SHA-256$, md5, jwt-pkey-fpath:. An MD5 secret gets the MD5
// challenge only where the rule allows md5, as in PostgreSQL; everything
// else, a missing secret included, gets SCRAM (mocked when unusable).
func chooseMethod(rule hba.Method, pamService, verifier string) credMethod {
	switch {
	case rule == hba.MethodTrust:
		return credTrust
	case pamService != "":
		return credPAM
	case strings.HasPrefix(verifier, config.JWTKeyPrefix):
		return credJWT
	case rule == hba.MethodMD5 && auth.IsMD5Verifier(verifier):
		return credMD5
	}
	return credSCRAM
}

// talosEnabled reports whether this client is a Talos login: user talos
// and keys configured. No other method is tried for it.
func (s *Session) talosEnabled() bool {
	return s.User == TalosUser && len(s.general().TalosKeys) > 0
}

// readCleartext asks for the password in clear (PAM, JWT, Talos need it
// as typed) and returns it.
func (s *Session) readCleartext() (string, error) {
	if err := s.writeAwait(protocol.AuthenticationCleartextPassword{}.Encode(nil)); err != nil {
		return "", err
	}
	body, err := s.readPassword()
	if err != nil {
		return "", err
	}
	var pm protocol.PasswordMessage
	if err := pm.Decode(body); err != nil {
		s.protocolViolation("invalid password packet")
		return "", err
	}
	return pm.Password, nil
}

// authPAM checks the client's password with the user's PAM service, off
// this goroutine and bounded by the login timeout (a slow PAM stack holds
// its slot, not other clients).
func (s *Session) authPAM(ctx context.Context, u *config.User) error {
	password, err := s.readCleartext()
	if err != nil {
		return err
	}
	if s.env.PAM == nil {
		return s.methodFailed("pam", pam.ErrUnavailable)
	}
	ctx, cancel := s.loginContext(ctx)
	defer cancel()
	if err := s.env.PAM.Authenticate(ctx, u.AuthPamService, s.User, password); err != nil {
		return s.methodFailed("pam", err)
	}
	return nil
}

// authJWT checks the client's password as a token for the user.
func (s *Session) authJWT(u *config.User) error {
	raw, err := s.readCleartext()
	if err != nil {
		return err
	}
	if u.JWTKey == nil {
		return s.methodFailed("jwt", errors.New("public key not loaded"))
	}
	if err := token.VerifyJWT(raw, u.JWTKey, s.User, time.Now()); err != nil {
		return s.methodFailed("jwt", err)
	}
	return nil
}

// loginTalos authenticates user talos with the token it sends as
// password, then logs it in as the pool user named by its highest role.
func (s *Session) loginTalos(ctx context.Context, sm *protocol.StartupMessage) error {
	if _, err := s.hbaRule(); err != nil {
		return err
	}
	raw, err := s.readCleartext()
	if err != nil {
		return err
	}
	g := s.general()
	id, err := token.VerifyTalos(raw, g.TalosKeys, s.Database, g.Talos.Databases, time.Now())
	if err != nil {
		return s.methodFailed("talos", err)
	}
	p, ok := s.env.Pools.Lookup(s.Database, id.Role)
	if !ok {
		s.loginFailed("talos")
		return s.refusef("28000", "Talos role %q has no user in database %q", id.Role, s.Database)
	}
	// The token's clientId is the client's identity: it replaces what the
	// client said its application_name is, so that pg_stat_activity and
	// the server's logs show who it is.
	s.env.Log.Info("talos login", zap.String("database", s.Database), zap.String("role", id.Role),
		zap.String("client_id", sanitizeClientID(id.ClientID)), zap.String("application_name", s.AppName), zap.Stringer("addr", s.RemoteAddr))
	s.User = id.Role
	if cid := sanitizeClientID(id.ClientID); cid != "" {
		s.AppName = cid
	}
	return s.enterPool(ctx, sm, p, nil)
}

// methodFailed refuses a PAM, JWT or Talos login: 28P01 with the token's
// reason (its texts never contain the token), or PostgreSQL's usual
// message for PAM; the detail goes to the log.
func (s *Session) methodFailed(method string, err error) error {
	s.authReason = method
	s.loginFailed(method)
	msg := fmt.Sprintf("password authentication failed for user %q", s.User)
	var te *token.Error
	if errors.As(err, &te) {
		msg = te.Error()
	}
	if method == "pam" && !errors.Is(err, pam.ErrAuthFailed) {
		s.env.Log.Warn("PAM authentication error", zap.String("user", s.User), zap.Error(err))
	}
	return s.refuse(&ClientError{Code: "28P01", Message: msg, Err: fmt.Errorf("%s authentication for %q: %w", method, s.User, err)})
}

// sanitizeClientID keeps a token's clientId fit for application_name and
// logs: printable ASCII, at most 63 bytes (PostgreSQL's NAMEDATALEN - 1).
func sanitizeClientID(id string) string {
	b := make([]byte, 0, min(len(id), 63))
	for i := 0; i < len(id) && len(b) < 63; i++ {
		if c := id[i]; c >= 0x20 && c < 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}
