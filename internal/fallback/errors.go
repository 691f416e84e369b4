package fallback

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ClientMessage is the sanitized text for the FATAL a client gets when
// fallback fails (SQLSTATE 08006 suggested); the detail is in the log.
const ClientMessage = "Unable to retrieve server parameters: the server may be unavailable or misconfigured; see the pg_doorman log"

// ErrNoCandidates means /cluster listed no member that may be used.
var ErrNoCandidates = errors.New("fallback: no eligible member in patroni /cluster")

// RejectedError is returned when every candidate of a round failed.
type RejectedError struct {
	Counts [numReasons]int
}

// Error reads "all fallback candidates rejected (3 startup_error, 1 timeout)":
// reasons in Reason order, zero counts left out.
func (e *RejectedError) Error() string {
	var parts []string
	for r, n := range e.Counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, Reason(r)))
		}
	}
	return "all fallback candidates rejected (" + strings.Join(parts, ", ") + ")"
}

// Total is the number of rejected candidates.
func (e *RejectedError) Total() int {
	n := 0
	for _, c := range e.Counts {
		n += c
	}
	return n
}

func (e *RejectedError) add(o *RejectedError) {
	for i := range e.Counts {
		e.Counts[i] += o.Counts[i]
	}
}

// DeadlineError is returned when the outer deadline (query_wait_timeout or
// the caller's context) ends a fallback round. It wraps
// context.DeadlineExceeded.
type DeadlineError struct {
	Budget time.Duration // the time fallback had when it started
	Err    error         // the context error
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("fallback: outer deadline %dms exceeded", e.Budget.Milliseconds())
}

func (e *DeadlineError) Unwrap() error { return e.Err }
