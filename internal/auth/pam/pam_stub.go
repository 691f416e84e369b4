//go:build !(linux && cgo && pam)

package pam

// Available reports whether this build can run PAM transactions.
func Available() bool { return false }

// transact is never called in this build: Authenticate returns
// ErrUnavailable first.
func transact(service, user, password string) error { return ErrUnavailable }
