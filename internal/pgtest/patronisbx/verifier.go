package patronisbx

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Verifier returns the SCRAM verifier of role once every node has replayed
// the leader's (up.sh sets the sandbox passwords anew, with a new salt, on
// every run; pg_doorman's SCRAM passthrough to another member needs the
// same salt there).
func (s *Sandbox) Verifier(t testing.TB, role string) string {
	t.Helper()
	read := func(n Node) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", n.SocketDir, n.Port))
		if err != nil {
			return "", err
		}
		defer c.Close(ctx)
		var v string
		err = c.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = $1", role).Scan(&v)
		return v, err
	}
	want, err := read(s.Leader(t))
	if err != nil {
		t.Fatalf("patronisbx: verifier of %s on the leader: %v", role, err)
	}
	if !strings.HasPrefix(want, "SCRAM-SHA-256$") {
		t.Fatalf("patronisbx: %s has no SCRAM verifier: %q", role, want)
	}
	for _, n := range s.Nodes {
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := read(n)
			if err == nil && got == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("patronisbx: %s did not replay the password of %s within 30s (last: %v)", n.Name, role, err)
			}
			time.Sleep(50 * time.Millisecond) // polling a condition
		}
	}
	return want
}
