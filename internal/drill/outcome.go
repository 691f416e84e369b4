package drill

import (
	"context"
	"errors"
	"io"
	"net"
	"sort"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Outcome is what the client can say about one attempt's write.
type Outcome string

// The outcome classes of seed 003.
const (
	// Acknowledged: the INSERT's result reached the client; it committed.
	Acknowledged Outcome = "acknowledged"
	// NotSent: the attempt failed before the INSERT was handed to the
	// connection (connect, authentication, target_session_attrs).
	NotSent Outcome = "not_sent"
	// Rejected: the server answered the INSERT with a statement-level
	// ERROR (e.g. 25006 read-only transaction): autocommit rolled it back.
	Rejected Outcome = "rejected"
	// Unknown: the INSERT may have been sent and no verdict came back (a
	// closed socket, a timeout, a FATAL): it may or may not have committed.
	Unknown Outcome = "unknown"
)

// Phase is how far an attempt got.
type Phase string

// The phases of one attempt, in order.
const (
	PhaseConnect Phase = "connect" // dial, startup, auth, target_session_attrs
	PhaseSend    Phase = "send"    // writing the INSERT
	PhaseWait    Phase = "wait"    // INSERT sent, waiting for its result
	PhaseDone    Phase = "done"    // result received
)

// Classify turns the error of an attempt that stopped in phase (PhaseConnect
// for a failed connect, PhaseWait for a failed INSERT) into its outcome,
// the phase actually reached, the failure category and the SQLSTATE (empty
// when the server sent none).
func Classify(phase Phase, err error) (Outcome, Phase, string, string) {
	if err == nil {
		return Acknowledged, PhaseDone, "", ""
	}
	cat, code := Category(err)
	if phase == PhaseConnect {
		return NotSent, PhaseConnect, cat, code
	}
	if pgconn.SafeToRetry(err) {
		// pgconn says nothing reached the wire, but in a node-loss drill a
		// token so classified was found committed: not trusted.
		return Unknown, PhaseSend, cat, code
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && severity(pe) == "ERROR" {
		return Rejected, PhaseWait, cat, code
	}
	return Unknown, PhaseWait, cat, code
}

func severity(pe *pgconn.PgError) string {
	if pe.SeverityUnlocalized != "" {
		return pe.SeverityUnlocalized
	}
	return pe.Severity
}

// Category names an error by class and SQLSTATE only, never by message
// text or credentials: "refused", "closed", "timeout", "read_only_session"
// (target_session_attrs=read-write said no), "sqlstate_XXXXX", "canceled",
// "other". A multi-host connect error joins the distinct categories of its
// hosts with "+", sorted. The second result is the first SQLSTATE found.
func Category(err error) (string, string) {
	var cats []string
	code := ""
	walk(err, func(leaf error) {
		c, s := leafCategory(leaf)
		cats = append(cats, c)
		if code == "" {
			code = s
		}
	})
	sort.Strings(cats)
	out := cats[:0]
	for i, c := range cats {
		if i == 0 || c != cats[i-1] {
			out = append(out, c)
		}
	}
	return strings.Join(out, "+"), code
}

// walk calls f on each branch of err's tree of joined errors: a chain is
// one branch, and errors.Join (pgconn's multi-host errors) forks it.
func walk(err error, f func(error)) {
	for e := err; e != nil; {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, c := range j.Unwrap() {
				walk(c, f)
			}
			return
		}
		if _, ok := e.(*pgconn.PgError); ok {
			break
		}
		next := errors.Unwrap(e)
		if next == nil {
			break
		}
		e = next
	}
	f(err)
}

func leafCategory(err error) (string, string) {
	var pe *pgconn.PgError
	var ne net.Error
	switch {
	case errors.As(err, &pe):
		return "sqlstate_" + pe.Code, pe.Code
	case errors.Is(err, pgconn.ErrReadOnlyConnection):
		return "read_only_session", ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused", ""
	case errors.Is(err, context.Canceled):
		return "canceled", ""
	case pgconn.Timeout(err), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout", ""
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed), errors.Is(err, pgconn.ErrConnClosed):
		return "closed", ""
	}
	return "other", ""
}
