package authquery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHBA: pg_hba runs before the lookup (a rejected client costs no
// query), trust needs the user to exist, and the rule's method meets the
// looked-up secret as in PostgreSQL: md5 with an MD5 secret, SCRAM
// otherwise.
func TestHBA(t *testing.T) {
	setup(t)
	md5User := newRole(t, "pw", "md5")
	scramUser := newRole(t, "pw", "scram-sha-256")
	trustUser := newRole(t, "pw", "md5") // trust gives no SCRAM keys to pass through; an MD5 hash passes
	hba := fmt.Sprintf(`  pg_hba: |
    host aqdb evil 127.0.0.1/32 reject
    host aqdb %s,ghost 127.0.0.1/32 trust
    host aqdb %s 127.0.0.1/32 scram-sha-256
    host all all 127.0.0.1/32 md5`, trustUser, md5User)
	d := start(t, hba, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err := login(ctx, d, "evil", "x")
	require.Equal(t, "28000", sqlstate(err))
	require.Equal(t, 0, authQueryStat(t, d, "executor_queries"), "a rejected client costs no lookup")

	require.Equal(t, trustUser, currentUser(t, d, trustUser, "anything"), "trust: no password check")
	_, err = login(ctx, d, "ghost", "x")
	require.Equal(t, "28000", sqlstate(err), "trust still needs the role to exist")

	_, err = login(ctx, d, md5User, "pw")
	require.Equal(t, "28P01", sqlstate(err), "an MD5 secret under a scram-sha-256 rule fails, as in PostgreSQL")
	require.Equal(t, scramUser, currentUser(t, d, scramUser, "pw"), "a SCRAM secret under an md5 rule gets SCRAM")
}
