package pam

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
)

// ErrUnavailable is returned by Authenticate in a build without PAM.
var ErrUnavailable = errors.New("pam: not available in this build " +
	"(build with: go build -tags pam, on Linux with cgo, a C compiler and libpam0g-dev)")

// ErrAuthFailed is wrapped by errors that mean PAM refused the user: wrong
// password, unknown user, expired account or password, too many tries.
var ErrAuthFailed = errors.New("pam: authentication failed")

// MaxPasswordLen bounds the password handed to PAM, in bytes (PAM's own
// PAM_MAX_RESP_SIZE is 512; modules may cut it shorter).
const MaxPasswordLen = 1024

// Authenticator runs PAM transactions off the caller's goroutine, at most
// max at a time. Create it with New; it is safe for concurrent use.
type Authenticator struct {
	// slots holds one token per running transaction; a transaction's
	// goroutine owns its token until PAM returns.
	slots    chan struct{}
	inFlight atomic.Int64
}

// New returns an Authenticator running at most max PAM transactions at a
// time. max below 1 is a caller bug.
func New(max int) *Authenticator {
	if max < 1 {
		panic(fmt.Sprintf("BUG: pam.New(%d): max must be at least 1", max))
	}
	return &Authenticator{slots: make(chan struct{}, max)}
}

// InFlight reports the PAM transactions running now, including those whose
// caller has given up.
func (a *Authenticator) InFlight() int { return int(a.inFlight.Load()) }

// Authenticate checks password for user with PAM service service. It
// returns nil when pam_authenticate and pam_acct_mgmt both succeed, an error
// wrapping ErrAuthFailed when PAM refused the user, ErrUnavailable in a
// build without PAM, and another error for input it refuses or system
// failures. Error texts carry PAM's message, never the password. If ctx ends
// first, while waiting for a slot or for PAM, Authenticate returns ctx.Err()
// at once; a transaction already started keeps its slot until it ends.
func (a *Authenticator) Authenticate(ctx context.Context, service, user, password string) error {
	if !Available() {
		return ErrUnavailable
	}
	if err := checkInput(service, user, password); err != nil {
		return err
	}
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := ctx.Err(); err != nil { // both were ready and select picked the slot
		<-a.slots
		return err
	}
	a.inFlight.Add(1)
	done := make(chan error, 1) // buffered: the transaction never waits for a caller that left
	go a.runTransaction(service, user, password, done)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runTransaction owns one slot token for the life of one PAM transaction
// and gives it back before reporting, so InFlight no longer counts a
// transaction whose result the caller has received. The thread lock keeps
// every call of the transaction on one OS thread, for modules that keep
// per-thread state.
func (a *Authenticator) runTransaction(service, user, password string, done chan<- error) {
	runtime.LockOSThread()
	err := transact(service, user, password)
	runtime.UnlockOSThread()
	a.inFlight.Add(-1)
	<-a.slots
	done <- err
}

// checkInput refuses what must not reach PAM: C strings cannot hold NUL,
// a service name is a file name in /etc/pam.d, and an empty password is
// refused as PostgreSQL's PAM method does (a client that sends none did not
// authenticate; some stacks accept empty passwords with nullok).
func checkInput(service, user, password string) error {
	switch {
	case service == "":
		return errors.New("pam: empty service name")
	case service == "." || service == ".." || strings.ContainsAny(service, "/\x00"):
		return fmt.Errorf("pam: service name %q is not a file name", service)
	case user == "":
		return errors.New("pam: empty user name")
	case strings.IndexByte(user, 0) >= 0:
		return errors.New("pam: user name contains a NUL byte")
	case len(password) > MaxPasswordLen:
		return fmt.Errorf("pam: password longer than %d bytes", MaxPasswordLen)
	case strings.IndexByte(password, 0) >= 0:
		return errors.New("pam: password contains a NUL byte")
	case password == "":
		return fmt.Errorf("empty password: %w", ErrAuthFailed)
	}
	return nil
}
