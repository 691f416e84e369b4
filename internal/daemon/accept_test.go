package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/session"
)

// acceptCounts is a Metrics that keeps AcceptFailed's reasons (acceptLoop
// runs in the test's goroutine).
type acceptCounts struct {
	session.Metrics // the rest is not called here
	reasons         []string
}

func (m *acceptCounts) Rejected(string)            {}
func (m *acceptCounts) MemoryReturned(uint64)      {}
func (m *acceptCounts) AcceptFailed(reason string) { m.reasons = append(m.reasons, reason) }

// TestAcceptFailuresCounted: a failed accept (out of descriptors, or
// another error) is counted by reason and the loop goes on; a closed
// listener ends it without a count.
func TestAcceptFailuresCounted(t *testing.T) {
	m := &acceptCounts{}
	d := &Daemon{Log: zap.NewNop(), metrics: m}
	errs := []error{
		&net.OpError{Op: "accept", Net: "tcp", Err: fmt.Errorf("accept4: %w", syscall.EMFILE)},
		syscall.ENFILE,
		errors.New("accept4: connection aborted"),
		net.ErrClosed,
	}
	calls := 0
	d.acceptLoop(context.Background(), func() (net.Conn, error) {
		err := errs[calls]
		calls++
		return nil, err
	})
	require.Equal(t, len(errs), calls, "the loop went on after each failure and ended at the close")
	require.Equal(t, []string{"fd_limit", "fd_limit", "other"}, m.reasons)
}
