package daemon_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/upgrade"
)

// TestUpgradeTimeoutCountsForceClosed: the old process of a binary upgrade
// closes the clients still in a transaction at shutdown_timeout with 58006
// and counts them (pg_doorman_binary_upgrade_clients_total{result=
// "force_closed"}); an idle client is drained, not counted among them.
func TestUpgradeTimeoutCountsForceClosed(t *testing.T) {
	d := apptest.Start(t, config(t, "  shutdown_timeout: 300ms"))
	ctx := context.Background()
	idle, err := dial(t, d, "benchdb")
	require.NoError(t, err)
	defer idle.Close(ctx)
	busy, err := dial(t, d, "benchdb")
	require.NoError(t, err)
	defer busy.Close(ctx)
	tx, err := busy.Begin(ctx)
	require.NoError(t, err)

	// A new process without a migration channel (as under -d): no client
	// moves, the one in a transaction waits for shutdown_timeout.
	spawn := func(context.Context, []upgrade.Listener) (*upgrade.Child, error) {
		return &upgrade.Child{PID: os.Getpid()}, nil
	}
	require.NoError(t, d.Upgrade(ctx, spawn))
	require.NoError(t, d.Wait(10*time.Second))

	_, err = tx.Exec(ctx, "SELECT 1")
	require.Error(t, err, "the client still in a transaction was closed")
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		require.Equal(t, "58006", pe.Code)
	}
	st := &d.Daemon.UpgradeStats
	require.Equal(t, uint64(1), st.ForceClosed.Load())
	require.Equal(t, uint64(1), st.Drained.Load())

	mfs, err := d.Metrics.Registry().Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "pg_doorman_binary_upgrade_clients_total" {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	require.Equal(t, 1.0, got["force_closed"])
	require.Equal(t, 1.0, got["drained"])
}
