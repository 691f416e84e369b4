package session

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/authquery"
	"github.com/doorman-go/doorman/internal/protocol"
)

// loginAuthQuery logs in a user the pool does not list, with the verifier
// the database's auth_query finds in PostgreSQL. pg_hba is applied before
// the lookup, so a refused address costs no query. An unknown user goes
// through the same mock exchange as for static pools; a lookup that fails
// with no cached answer ends the login with 08P01 (PgBouncer's code for
// its own failures) and a WARN log, the cause staying in the log.
func (s *Session) loginAuthQuery(ctx context.Context, sm *protocol.StartupMessage, res *authquery.Resolver) error {
	rule, err := s.hbaRule()
	if err != nil {
		return err
	}
	// A login waiting for another login's lookup of the same name gives up
	// with its own deadline; a lookup runs under the cache's fetch timeout.
	lctx, cancel := s.loginContext(ctx)
	ent, err := res.Get(lctx, s.User)
	cancel()
	if err != nil {
		res.Authenticated(false)
		s.loginFailed("auth_query")
		s.env.Log.Warn("auth_query lookup failed", zap.String("database", s.Database), zap.String("user", s.User), zap.Error(err))
		return s.refuse(&ClientError{Code: "08P01", Message: "authentication lookup failed: auth_query could not be run, see the pg_doorman log",
			Err: fmt.Errorf("auth_query lookup: %w", err)})
	}
	if !ent.Found {
		s.authReason = "no_user"
	}
	verifier := ent.Verifier
	method := methodFor(rule, verifier)
	if !ent.Found && method == credTrust {
		res.Authenticated(false)
		s.loginFailed("no_user")
		return s.refusef("28000", "role %q does not exist", s.User)
	}
	var refetch func() string
	if ent.Found {
		refetch = func() string {
			got, _, err := res.Refetch(ctx, s.User)
			if err != nil || !got.Found {
				return ""
			}
			verifier = got.Verifier
			return got.Verifier
		}
	}
	clientKey, err := s.authenticate(method, verifier, refetch)
	if err != nil {
		res.Authenticated(false)
		return err
	}
	res.Authenticated(true)
	p, err := s.env.Pools.AuthQueryPool(s.Database, s.User, verifier)
	if err != nil {
		s.loginFailed("no_pool")
		return s.refuse(&ClientError{Code: "08P01", Message: "auth_query pool is gone: the configuration changed, reconnect", Err: err})
	}
	return s.enterPool(ctx, sm, p, clientKey)
}
