package coordinator_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/coordinator"
)

func TestSnapshotRendering(t *testing.T) {
	t.Parallel()
	s := coordinator.Snapshot{Database: "mydb", MaxDBConnections: 80, Current: 95, ReserveSize: 20,
		ReserveUsed: 15, Counters: coordinator.Counters{Evictions: 300, ReserveAcquisitions: 500, Exhaustions: 2}}
	require.Equal(t, []string{"database", "max_db_conn", "current", "reserve_size", "reserve_used",
		"evictions", "reserve_acq", "exhaustions"}, coordinator.Columns())
	require.Equal(t, []string{"mydb", "80", "95", "20", "15", "300", "500", "2"}, s.Row())
	require.Equal(t, []coordinator.Metric{
		{Type: "connections", Value: 95}, {Type: "reserve_in_use", Value: 15},
		{Type: "max_connections", Value: 80}, {Type: "reserve_pool_size", Value: 20},
	}, s.Gauges())
	require.Equal(t, []coordinator.Metric{
		{Type: "evictions", Value: 300}, {Type: "reserve_acquisitions", Value: 500},
		{Type: "exhaustions", Value: 2},
	}, s.Totals())
}

func TestNewRejectsZeroLimit(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { coordinator.New(coordinator.Config{}, nil) })
}
