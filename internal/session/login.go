package session

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/doorman-go/doorman/internal/auth"
	"github.com/doorman-go/doorman/internal/auth/hba"
	"github.com/doorman-go/doorman/internal/coordinator"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/protocol"
	"github.com/doorman-go/doorman/internal/rawio"
)

// login authenticates a pool client and sends the welcome.
// The method follows the seed's order: Talos for user talos, pg_hba
// (reject, trust), PAM, then the format of the stored password
// (chooseMethod); users the pool does not list go to auth_query.
func (s *Session) login(ctx context.Context, sm *protocol.StartupMessage) error {
	if s.talosEnabled() {
		return s.loginTalos(ctx, sm)
	}
	p, ok := s.env.Pools.Lookup(s.Database, s.User)
	if !ok {
		if res := s.env.Pools.AuthQuery(s.Database); res != nil {
			return s.loginAuthQuery(ctx, sm, res)
		}
		return s.loginWithoutPool()
	}
	u := p.Settings().User
	rule, err := s.hbaRule()
	if err != nil {
		return err
	}
	var clientKey []byte
	switch m := chooseMethod(rule.Method, u.AuthPamService, u.Password); m {
	case credPAM:
		err = s.authPAM(ctx, u)
	case credJWT:
		err = s.authJWT(u)
	default:
		clientKey, err = s.authenticate(m, u.Password, nil)
	}
	if err != nil {
		return err
	}
	return s.enterPool(ctx, sm, p, clientKey)
}

// enterPool finishes the login of an authenticated client into p.
func (s *Session) enterPool(ctx context.Context, sm *protocol.StartupMessage, p *pooler.Pool, clientKey []byte) error {
	s.pool = p
	set := p.Settings()
	if set.General.PreparedStatements && set.Mode() == "transaction" {
		s.rw = newRewriter(p, s.User)
	}
	if clientKey != nil {
		p.SetClientKey(clientKey)
	}
	params, err := p.ServerParams(ctx)
	if err != nil {
		s.loginFailed("server_login")
		return s.serverLoginFailed(err)
	}
	s.clientParams = params
	s.clientParams["application_name"] = defaultAppName(s.AppName, set)
	if set.General.SyncServerParameters {
		// GUC names are case-insensitive: "timezone" sets TimeZone.
		for name, v := range sm.Parameters {
			for _, k := range syncedParams {
				if strings.EqualFold(name, k) {
					s.clientParams[k] = v
				}
			}
		}
	}
	if s.env.Metrics != nil {
		s.env.Metrics.ClientLogin(s.Database, s.User)
	}
	p.Stats.ClientsTotal.Add(1)
	return s.welcome()
}

// loginWithoutPool answers a client whose (database, user) has no pool
// without telling an unauthenticated client which of the two is unknown,
// as PostgreSQL checks the database only after authentication: a user
// found in another pool authenticates against that password and only then
// learns that the database is not served; an unknown user goes through a
// mock SCRAM exchange that fails like a wrong password.
func (s *Session) loginWithoutPool() error {
	verifier, known := s.verifierElsewhere()
	if !known {
		s.authReason = "no_user"
	}
	method, err := s.authMethod(verifier)
	if err != nil {
		return err
	}
	if !known && method == credTrust {
		// Trust hides nothing in PostgreSQL either.
		s.loginFailed("no_user")
		return s.refusef("28000", "role %q does not exist", s.User)
	}
	if _, err := s.authenticate(method, verifier, nil); err != nil {
		return err
	}
	if !s.env.Pools.HasDatabase(s.Database) {
		s.loginFailed("no_database")
		return s.refusef("3D000", "no such database: %s", s.Database)
	}
	s.loginFailed("no_pool")
	return s.refusef("42501", "permission denied for database %q", s.Database)
}

// verifierElsewhere finds the user's password in the pools of other
// databases (the first by database name).
func (s *Session) verifierElsewhere() (string, bool) {
	pools := s.env.Pools.Config().Pools
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, u := range pools[name].Users {
			if u.Username == s.User {
				return u.Password, true
			}
		}
	}
	return "", false
}

// loginFailed counts a refused login and logs it (rate-limited).
func (s *Session) loginFailed(reason string) {
	if s.env.Metrics != nil {
		s.env.Metrics.LoginFailure(reason)
	}
	logLoginFailure(s.env.Log, &failedLogins, s.User, s.Database, s.RemoteAddr, reason)
}

// serverLoginFailed turns a failure to open the first server connection
// into a message for the client without leaking internal detail.
func (s *Session) serverLoginFailed(err error) error {
	ce := serverFailure(err)
	if !isFallbackFailure(err) && !errors.Is(err, pooler.ErrWaitTimeout) && !errors.Is(err, coordinator.ErrExhausted) {
		ce.Message = "server login failed: " + ce.Message
	}
	return s.refuse(ce)
}

// welcome sends AuthenticationOk, the ParameterStatus set, BackendKeyData
// and ReadyForQuery.
func (s *Session) welcome() error {
	b := protocol.AuthenticationOk{}.Encode(nil)
	keys := make([]string, 0, len(s.clientParams))
	for k := range s.clientParams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = protocol.ParameterStatus{Name: k, Value: s.clientParams[k]}.Encode(b)
	}
	b = protocol.BackendKeyData{ProcessID: s.cancelPID, SecretKey: s.cancelSecret}.Encode(b)
	b = protocol.ReadyForQuery{TxStatus: protocol.TxIdle}.Encode(b)
	// From now on only the tracked parameters matter (and the map would
	// stay with an idle client).
	s.tracked.fromMap(s.clientParams, &s.env.tracked)
	s.clientParams = nil
	s.state.Store(StateIdle)
	if err := s.Write(b); err != nil {
		return fmt.Errorf("send welcome: %w", err)
	}
	s.applyLinger()
	return nil
}

// applyLinger sets tcp_so_linger on a logged-in TCP client: from now on a
// close may reset the connection, as the setting asks. Before the welcome
// the socket keeps the default (a graceful close), see daemon's accept path.
func (s *Session) applyLinger() {
	tc, ok := tcpClient(s.raw)
	if !ok {
		return
	}
	if sec := s.general().TCPSoLinger; sec >= 0 {
		_ = rawio.SetLinger(tc, sec)
	}
}

// authMethod applies pg_hba (or the legacy hba list) and picks the
// challenge for the stored verifier.
func (s *Session) authMethod(verifier string) (credMethod, error) {
	rule, err := s.hbaRule()
	if err != nil {
		return 0, err
	}
	return methodFor(rule, verifier), nil
}

// legacyRule stands for the legacy general.hba list having admitted a
// client: md5 or SCRAM by the verifier, as PostgreSQL's md5 method does.
var legacyRule = hba.Rule{Method: hba.MethodMD5}

// hbaRule finds the pg_hba rule of the connection and refuses it (FATAL
// sent, failure counted) when no rule matches, the rule rejects or names
// a method pg_doorman does not have. It runs before any credential is
// looked up.
func (s *Session) hbaRule() (hba.Rule, error) {
	rules := s.env.HBA()
	if rules == nil {
		if !s.legacyHBAAllows() {
			s.loginFailed("hba")
			s.noHBAEntry()
			return hba.Rule{}, errors.New("rejected by hba")
		}
		return legacyRule, nil
	}
	rule, ok := rules.Match(s.hbaRequest())
	if !ok {
		s.loginFailed("hba")
		s.noHBAEntry()
		return hba.Rule{}, errors.New("no hba rule matched")
	}
	switch rule.Method {
	case hba.MethodTrust, hba.MethodMD5, hba.MethodSCRAM:
		return rule, nil
	}
	s.loginFailed("hba")
	if rule.Method == hba.MethodReject {
		return hba.Rule{}, s.refuse(&ClientError{Code: "28000", Err: fmt.Errorf("hba line %d rejects", rule.Line),
			Message: fmt.Sprintf("pg_hba.conf rejects connection for host %q, user %q, database %q", s.addrString(), s.User, s.Database)})
	}
	return hba.Rule{}, s.refuse(&ClientError{Code: "28P01", Message: fmt.Sprintf("password authentication failed for user %q", s.User),
		Err: fmt.Errorf("hba line %d method %s is not supported", rule.Line, rule.MethodName)})
}

// methodFor picks the challenge of an admitting rule for verifier. Like
// PostgreSQL (CheckPWChallengeAuth): md5 only with an MD5 secret;
// otherwise SCRAM, mocked when the secret is missing (PostgreSQL mocks
// with its default password_encryption, SCRAM).
func methodFor(rule hba.Rule, verifier string) credMethod {
	switch {
	case rule.Method == hba.MethodTrust:
		return credTrust
	case rule.Method == hba.MethodMD5 && auth.IsMD5Verifier(verifier):
		return credMD5
	}
	return credSCRAM
}

// hbaRequest is what pg_hba rules match on, TLS as negotiated.
func (s *Session) hbaRequest() hba.Request {
	return hba.Request{Local: s.Local, TLS: s.tls != nil, Addr: s.clientAddr(), Database: s.Database, User: s.User}
}

// noHBAEntry sends PostgreSQL's (15) refusal when no rule matches, which
// ends with the connection's encryption.
func (s *Session) noHBAEntry() {
	enc := "no encryption"
	if s.tls != nil {
		enc = "SSL encryption"
	}
	s.fatal("28000", fmt.Sprintf("no pg_hba.conf entry for host %q, user %q, database %q, %s", s.addrString(), s.User, s.Database, enc))
}

func (s *Session) addrString() string {
	if s.Local {
		return "[local]"
	}
	return s.clientAddr().String()
}

func (s *Session) legacyHBAAllows() bool {
	list := s.general().Hba
	if len(list) == 0 || s.Local {
		return true
	}
	a := s.clientAddr()
	for _, c := range list {
		if pfx, err := parsePrefix(c); err == nil && pfx.Contains(a) {
			return true
		}
	}
	return false
}

// authenticate runs the challenge. For SCRAM it returns the ClientKey
// recovered from the client's proof (for passthrough). refetch, when not
// nil, is called once after the client failed against verifier and gives
// the verifier to check again (auth_query: the password may have changed);
// only an MD5 response can be checked again within the same exchange.
func (s *Session) authenticate(method credMethod, verifier string, refetch func() string) ([]byte, error) {
	switch method {
	case credTrust:
		return nil, nil
	case credMD5:
		return nil, s.authMD5(verifier, refetch)
	case credSCRAM:
		v, err := auth.ParseSCRAMVerifier(verifier)
		if err != nil {
			// No usable SCRAM secret: the exchange runs and fails like a
			// wrong password, with a salt stable per user name.
			if s.authReason == "" {
				s.authReason = "no_password"
			}
			v = mockVerifier(mockSecret(), s.User)
			refetch = nil
		}
		return s.authSCRAM(v, refetch)
	}
	return nil, fmt.Errorf("unsupported method %v", method)
}

func (s *Session) authFailed() error {
	reason := s.authReason
	if reason == "" {
		reason = "password"
	}
	s.loginFailed(reason)
	return s.refusef("28P01", "password authentication failed for user %q", s.User)
}

func (s *Session) authMD5(verifier string, refetch func() string) error {
	var salt [4]byte
	_, _ = rand.Read(salt[:])
	if err := s.writeAwait(protocol.AuthenticationMD5Password{Salt: salt}.Encode(nil)); err != nil {
		return err
	}
	body, err := s.readPassword()
	if err != nil {
		return err
	}
	var pm protocol.PasswordMessage
	if err := pm.Decode(body); err != nil {
		s.protocolViolation("invalid password packet")
		return err
	}
	if auth.CheckMD5(verifier, salt, pm.Password) {
		return nil
	}
	if refetch != nil {
		if v := refetch(); v != verifier && auth.IsMD5Verifier(v) && auth.CheckMD5(v, salt, pm.Password) {
			return nil
		}
	}
	return s.authFailed()
}

func (s *Session) authSCRAM(v auth.SCRAMVerifier, refetch func() string) ([]byte, error) {
	// On TLS SCRAM-SHA-256-PLUS is offered first, as PostgreSQL does.
	var endPoint []byte
	if s.tls != nil && s.tls.material != nil {
		endPoint = s.tls.material.EndPoint
	}
	mechs := []string{auth.SCRAMMechanism}
	if endPoint != nil {
		mechs = []string{auth.SCRAMPlusMechanism, auth.SCRAMMechanism}
	}
	if err := s.writeAwait(protocol.AuthenticationSASL{Mechanisms: mechs}.Encode(nil)); err != nil {
		return nil, err
	}
	body, err := s.readPassword()
	if err != nil {
		return nil, err
	}
	var init protocol.SASLInitialResponse
	if err := init.Decode(body); err != nil || !slices.Contains(mechs, init.Mechanism) {
		s.protocolViolation("invalid SASL initial response")
		return nil, fmt.Errorf("sasl initial response: %v", err)
	}
	srv := auth.NewSCRAMServer(v, rand.Reader)
	srv.ChannelBinding(endPoint, init.Mechanism == auth.SCRAMPlusMechanism)
	first, err := srv.ClientFirst(init.Data)
	if err != nil {
		s.protocolViolation("malformed SCRAM message")
		return nil, err
	}
	if err := s.writeAwait(protocol.AuthenticationSASLContinue{Data: first}.Encode(nil)); err != nil {
		return nil, err
	}
	body, err = s.readPassword()
	if err != nil {
		return nil, err
	}
	var resp protocol.SASLResponse
	if err := resp.Decode(body); err != nil {
		s.protocolViolation("invalid SASL response")
		return nil, err
	}
	final, err := srv.ClientFinal(resp.Data)
	if err != nil {
		if errors.Is(err, auth.ErrAuthFailed) {
			if refetch != nil {
				refetch() // the next login sees a changed password
			}
			return nil, s.authFailed()
		}
		s.protocolViolation("malformed SCRAM message")
		return nil, err
	}
	if err := s.Write(protocol.AuthenticationSASLFinal{Data: final}.Encode(nil)); err != nil {
		return nil, err
	}
	if m, ok := s.env.Metrics.(TLSMetrics); ok {
		m.SCRAMAuth(init.Mechanism)
	}
	return srv.ClientKey(), nil
}

// MaxAuthMessage bounds a password/SASL message including its length word:
// PostgreSQL's PG_MAX_AUTH_TOKEN_LENGTH.
const MaxAuthMessage = 65535

// readPassword reads the next 'p' message of the auth exchange, with the
// login's reader that readStartup made. A broken length or an oversized
// message is answered (08P01, 54000) before the session ends; a client
// that just goes away is not a login failure.
func (s *Session) readPassword() ([]byte, error) {
	f, err := s.crd.Next()
	if err != nil {
		s.badClientMessage(err)
		return nil, fmt.Errorf("read auth response: %w", err)
	}
	if f.Type() != protocol.MsgPassword {
		s.protocolViolation(fmt.Sprintf("expected password response, got message type %q", f.Type()))
		return nil, fmt.Errorf("expected password message, got %q", f.Type())
	}
	return f.Body(), nil
}

// badClientMessage answers a read error that is the client's fault: a
// declared length below 4 (08P01) or above the limit (54000).
func (s *Session) badClientMessage(err error) {
	var tooLarge *protocol.MessageTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		s.loginFailed("protocol")
		s.fatal("54000", fmt.Sprintf("message too long: %d bytes, limit %d", tooLarge.Length, tooLarge.Max))
	case errors.Is(err, protocol.ErrInvalidLength):
		s.protocolViolation("invalid message length")
	}
}

// protocolViolation counts and answers a client that broke the protocol
// during login (FATAL 08P01).
func (s *Session) protocolViolation(msg string) {
	s.loginFailed("protocol")
	s.fatal("08P01", msg)
}

func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.ParsePrefix(s)
}
