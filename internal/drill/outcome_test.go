package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// notSentErr is what pgconn returns when nothing reached the wire.
type notSentErr struct{ error }

func (notSentErr) SafeToRetry() bool { return true }
func (e notSentErr) Unwrap() error   { return e.error }

func pgErr(sev, code string) error {
	return &pgconn.PgError{Severity: sev, SeverityUnlocalized: sev, Code: code, Message: "secret text"}
}

func refused(addr string) error {
	return fmt.Errorf("%s: %w", addr, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
}

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		phase   Phase
		err     error
		outcome Outcome
		reached Phase
		cat     string
		code    string
	}{
		{"success", PhaseWait, nil, Acknowledged, PhaseDone, "", ""},
		{"connect refused", PhaseConnect, refused("a"), NotSent, PhaseConnect, "refused", ""},
		{"connect starting up", PhaseConnect, fmt.Errorf("connect: %w", pgErr("FATAL", "57P03")), NotSent, PhaseConnect, "sqlstate_57P03", "57P03"},
		{"connect read-only session", PhaseConnect, fmt.Errorf("x: %w", pgconn.ErrReadOnlyConnection), NotSent, PhaseConnect, "read_only_session", ""},
		{"multi-host connect", PhaseConnect, fmt.Errorf("connect: %w", errors.Join(refused("a"),
			fmt.Errorf("b: %w", pgconn.ErrReadOnlyConnection), refused("c"))), NotSent, PhaseConnect, "read_only_session+refused", ""},
		{"multi-host first sqlstate", PhaseConnect, errors.Join(refused("a"), pgErr("FATAL", "57P01"), pgErr("FATAL", "57P03")),
			NotSent, PhaseConnect, "refused+sqlstate_57P01+sqlstate_57P03", "57P01"},
		{"connect timeout", PhaseConnect, fmt.Errorf("dial: %w", context.DeadlineExceeded), NotSent, PhaseConnect, "timeout", ""},
		{"driver says safe to retry: still unknown", PhaseWait, notSentErr{fmt.Errorf("write: %w", syscall.EPIPE)}, Unknown, PhaseSend, "closed", ""},
		{"read-only transaction", PhaseWait, pgErr("ERROR", "25006"), Rejected, PhaseWait, "sqlstate_25006", "25006"},
		{"localized severity", PhaseWait, &pgconn.PgError{Severity: "ERREUR", SeverityUnlocalized: "ERROR", Code: "25006"},
			Rejected, PhaseWait, "sqlstate_25006", "25006"},
		{"fatal after send is unknown", PhaseWait, pgErr("FATAL", "57P01"), Unknown, PhaseWait, "sqlstate_57P01", "57P01"},
		{"eof after send", PhaseWait, fmt.Errorf("read: %w", io.ErrUnexpectedEOF), Unknown, PhaseWait, "closed", ""},
		{"reset after send", PhaseWait, &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, Unknown, PhaseWait, "closed", ""},
		{"timeout after send", PhaseWait, fmt.Errorf("q: %w", context.DeadlineExceeded), Unknown, PhaseWait, "timeout", ""},
		{"canceled", PhaseWait, context.Canceled, Unknown, PhaseWait, "canceled", ""},
		{"anything else", PhaseWait, errors.New("boom"), Unknown, PhaseWait, "other", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, p, cat, code := Classify(tc.phase, tc.err)
			require.Equal(t, tc.outcome, o)
			require.Equal(t, tc.reached, p)
			require.Equal(t, tc.cat, cat)
			require.Equal(t, tc.code, code)
			require.NotContains(t, cat, "secret")
		})
	}
}
