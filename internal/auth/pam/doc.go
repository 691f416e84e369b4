// Package pam checks a client's cleartext password with a PAM service of
// the host (/etc/pam.d/<service>), for pool users with auth_pam_service.
//
// An Authenticator runs each check as one PAM transaction: pam_start with
// the service and user, pam_authenticate, pam_acct_mgmt, pam_end. The
// conversation answers password prompts with the client's password and
// echoing prompts with the user name. A transaction runs on its own
// goroutine, locked to one OS thread for its whole life, and at most max of
// them run at a time: a slow stack (LDAP, Kerberos) must not stall the
// caller past its context, nor grow OS threads without bound. PAM calls
// cannot be interrupted, so a caller whose context ends gets ctx.Err() at
// once while the transaction keeps its slot until PAM returns. An
// Authenticator is safe for concurrent use.
//
// Errors wrap ErrAuthFailed when PAM refused the user (wrong password,
// unknown user, expired account or password); other errors are system
// failures (a broken stack, an unreachable directory). A missing service
// file is not an error of pam_start: Linux-PAM falls back to
// /etc/pam.d/other, which on Debian includes the common-* stacks, so the
// operator must create the service file.
//
// The real implementation needs the build tag pam, Linux, cgo and libpam
// (go build -tags pam; Debian package libpam0g-dev and a C compiler).
// Without it Available reports false and Authenticate returns
// ErrUnavailable. The package does no PAM session or credential
// management (pam_open_session, pam_setcred), never passes the password on
// to the backend, and does not check the service file at start.
//
// Spec: the PAM section of the pg_doorman documentation; pam(3).
package pam
