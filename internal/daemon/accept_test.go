package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// TestAcceptBackoffEndsAtShutdown: a shutdown (or the end of Serve's
// context) while the accept loop backs off ends the loop then, not when
// the back-off is over. The ninth failure in a row is followed by a 1 s
// wait; the stop comes during it. Ended by the stop, the loop calls accept
// nine times; a loop that sleeps the back-off out calls it a tenth time
// (a closed listener then).
func TestAcceptBackoffEndsAtShutdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		stop func(d *Daemon, cancel context.CancelFunc)
	}{
		{"shutdown", func(d *Daemon, _ context.CancelFunc) { close(d.shutdown) }},
		{"context", func(_ *Daemon, cancel context.CancelFunc) { cancel() }},
	}
	const failures = 9
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := &Daemon{Log: zap.NewNop(), metrics: &acceptCounts{}, shutdown: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var calls atomic.Int32
			waiting := make(chan struct{}) // closed at the last failure: the long wait follows
			done := make(chan struct{})
			go func() {
				defer close(done)
				d.acceptLoop(ctx, func() (net.Conn, error) {
					switch n := calls.Add(1); {
					case n < failures:
						return nil, syscall.EMFILE
					case n == failures:
						close(waiting)
						return nil, syscall.EMFILE
					}
					return nil, net.ErrClosed
				})
			}()
			<-waiting
			tt.stop(d, cancel)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the accept loop did not end")
			}
			require.Equal(t, int32(failures), calls.Load(), "the loop ended in its back-off, without another accept")
		})
	}
}

// TestAcceptBackoff: 5 ms after a success, doubling, at most a second.
func TestAcceptBackoff(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	d := time.Duration(0)
	for range 10 {
		d = acceptBackoff(d)
		got = append(got, d)
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, got)
}
