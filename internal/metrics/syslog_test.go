package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/logging"
)

// TestSyslogFailures: pg_doorman_syslog_send_failures_total is there only
// once RegisterSyslog is called (pg_doorman logs to syslog), and reads the
// logger's counts at scrape time.
func TestSyslogFailures(t *testing.T) {
	t.Parallel()
	m := New(newDaemon(t))
	busy := seriesKey("pg_doorman_syslog_send_failures_total", "reason", "busy")
	unreachable := seriesKey("pg_doorman_syslog_send_failures_total", "reason", "unreachable")
	require.NotContains(t, gather(t, m), busy, "not logging to syslog: no family")

	var c logging.SyslogCounts
	m.RegisterSyslog(&c)
	values := gather(t, m)
	require.Contains(t, values, busy, "at zero before the first failure")
	require.Zero(t, values[busy])
	require.Zero(t, values[unreachable])

	c.Busy.Add(3)
	c.Unreachable.Add(1)
	values = gather(t, m)
	require.Equal(t, 3.0, values[busy])
	require.Equal(t, 1.0, values[unreachable])
}
