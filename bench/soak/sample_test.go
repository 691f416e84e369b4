package soak

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const exposition = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 812
# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
go_memstats_heap_inuse_bytes 2.5165824e+07
go_memstats_heap_inuse_bytes_total 1
pg_doorman_connections_total{type="cancel"} 613
pg_doorman_connections_total{type="plain"} 700
`

func TestParseMetrics(t *testing.T) {
	t.Parallel()
	m, err := parseMetrics(strings.NewReader(exposition), metricGoroutines, metricHeapInuse, metricCancels)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{metricGoroutines: 812, metricHeapInuse: 25165824, metricCancels: 613}, m)

	_, err = parseMetrics(strings.NewReader("go_goroutines 1\n"), metricGoroutines, metricHeapInuse)
	require.ErrorContains(t, err, "metrics have no go_memstats_heap_inuse_bytes")

	_, err = parseMetrics(strings.NewReader("go_goroutines many\n"), metricGoroutines)
	require.ErrorContains(t, err, `metric line "go_goroutines many"`)
}
