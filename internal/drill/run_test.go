package drill_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/drill"
	"github.com/doorman-go/doorman/internal/pgtest"
)

func tableExists(t *testing.T, c *pgtest.Cluster, table string) bool {
	t.Helper()
	return c.QueryInt(t, "SELECT count(*) FROM pg_class WHERE relname = $1", table) > 0
}

// TestRunSteady: against one healthy primary every attempt is acknowledged
// and found, the table is dropped, and the counters agree with the report.
func TestRunSteady(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t, pgtest.Options{})
	pg.CreateUser(t, "drill", "drill-secret", "scram-sha-256")
	pg.Exec(t, "GRANT CREATE ON SCHEMA public TO drill")
	reg := prometheus.NewRegistry()
	m := drill.NewMetrics(reg)
	r, err := drill.Run(context.Background(), drill.Config{
		DSN: pg.DSN("drill", "drill-secret", "postgres"), Workers: 3, Duration: 700 * time.Millisecond,
		Interval: 50 * time.Millisecond, Table: "doorman_drill_steady",
	}, m)
	require.NoError(t, err)
	require.Greater(t, r.Summary.Outcomes[drill.Acknowledged], 3)
	require.Equal(t, r.Summary.Events, r.Summary.Outcomes[drill.Acknowledged], "%+v", r.Summary.Failures)
	require.True(t, r.Reconciliation.Done)
	require.Zero(t, r.Reconciliation.Violations(), "%+v", r.Reconciliation)
	require.Len(t, r.Summary.Servers, 1)
	require.Nil(t, r.Summary.NewPrimary)
	require.Empty(t, r.DropError)
	require.False(t, tableExists(t, pg, "doorman_drill_steady"), "the drill drops its table")
	require.Equal(t, float64(r.Summary.Events), testutil.ToFloat64(m.Attempts.WithLabelValues("acknowledged", "")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Reconciles.WithLabelValues("ok")))
}

// TestRunRefusesForeignTable: the drill only creates its own table; a name
// that exists makes it stop before writing, and the table is left alone.
func TestRunRefusesForeignTable(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t, pgtest.Options{})
	pg.Exec(t, "CREATE TABLE doorman_drill_taken (token text, worker int, attempt int)")
	_, err := drill.Run(context.Background(), drill.Config{
		DSN: pg.DSN("postgres", "", "postgres"), Workers: 1, Duration: 100 * time.Millisecond, Table: "doorman_drill_taken",
	}, nil)
	require.ErrorContains(t, err, "create table doorman_drill_taken")
	require.True(t, tableExists(t, pg, "doorman_drill_taken"))
	_, err = drill.Run(context.Background(), drill.Config{DSN: pg.DSN("postgres", "", "postgres"), Table: "Bad-Name"}, nil)
	require.ErrorContains(t, err, "is not a lower-case identifier")
}

// TestRunReadOnlyIsNotSent: a server that is read-only for the user fails
// target_session_attrs=read-write, so nothing is sent and the run stops at
// the table.
func TestRunReadOnlyIsNotSent(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t, pgtest.Options{})
	pg.CreateUser(t, "ro", "ro-secret", "scram-sha-256")
	pg.Exec(t, "ALTER ROLE ro SET default_transaction_read_only = on")
	_, err := drill.Run(context.Background(), drill.Config{DSN: pg.DSN("ro", "ro-secret", "postgres"), Workers: 1}, nil)
	require.ErrorContains(t, err, "read only connection")
}

// TestRunValidateModes: a role that is read-only by its own setting is
// refused by both checks (libpq's sees default_transaction_read_only=on
// at login, pgx's asks SHOW); a bad mode is a config error.
func TestRunValidateModes(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t, pgtest.Options{})
	pg.CreateUser(t, "ro2", "ro-secret", "scram-sha-256")
	pg.Exec(t, "ALTER ROLE ro2 SET default_transaction_read_only = on")
	for _, mode := range []string{drill.ValidateLibpq, drill.ValidateShow} {
		_, err := drill.Run(context.Background(), drill.Config{DSN: pg.DSN("ro2", "ro-secret", "postgres"), Validate: mode}, nil)
		require.ErrorContains(t, err, "read only connection", mode)
	}
	_, err := drill.Run(context.Background(), drill.Config{DSN: pg.DSN("ro2", "ro-secret", "postgres"), Validate: "guess"}, nil)
	require.ErrorContains(t, err, `validate: "guess"`)
}

// TestRunAcrossPromotion: a multi-host DSN over a primary and its replica;
// the primary is stopped (fast) and the replica promoted while six workers
// write. Every acknowledged write is found on the new primary, the writes
// move to it, and the move is no longer than the write gap. (pgx tries the next host
// within one connect, so the move may cost no failed attempt at all.) The run
// lasts 10 s so that a loaded machine still promotes well within it.
func TestRunAcrossPromotion(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t, pgtest.Options{})
	replica := pg.AddReplica(t)
	dsn := fmt.Sprintf("host=%s,%s port=%d,%d user=postgres dbname=postgres sslmode=disable connect_timeout=2",
		pg.Host, replica.Host, pg.Port, replica.Port)
	const table = "doorman_drill_promote"
	type result struct {
		r   *drill.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := drill.Run(context.Background(), drill.Config{DSN: dsn, Duration: 10 * time.Second, Table: table}, nil)
		done <- result{r, err}
	}()
	require.Eventually(t, func() bool {
		return tableExists(t, pg, table) && pg.QueryInt(t, "SELECT count(*) FROM "+table) >= 10
	}, 10*time.Second, 20*time.Millisecond, "writes reach the primary")
	pg.Stop(t)
	replica.Promote(t)
	res := <-done
	require.NoError(t, res.err)
	r := res.r
	require.True(t, r.Reconciliation.Done, r.Reconciliation.Error)
	require.Zero(t, r.Reconciliation.Violations(), "%+v", r.Reconciliation)
	require.NotNil(t, r.Summary.NewPrimary, "acknowledged writes moved to the promoted replica: %+v", r.Summary.Servers)
	require.Greater(t, r.Summary.WriteGap, time.Duration(0))
	np := r.Summary.NewPrimary
	require.Greater(t, np.FirstOnNew, np.LastOnOld)
	require.GreaterOrEqual(t, r.Summary.WriteGap, np.FirstOnNew-np.LastOnOld, "the move is a pause between acknowledgements")
	t.Logf("write gap %s, failures %+v, reconciliation %+v", r.Summary.WriteGap, r.Summary.Failures, r.Reconciliation)
	require.False(t, tableExists(t, replica, table))
}
