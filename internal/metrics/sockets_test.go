package metrics

import (
	"errors"
	"net"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/procnet"
)

func TestSocketCollector(t *testing.T) {
	t.Parallel()
	var tcp procnet.TCPCounts
	tcp[procnet.TCPListen], tcp[procnet.TCPEstablished], tcp[0] = 1, 3, 1
	var tcp6 procnet.TCPCounts
	tcp6[procnet.TCPTimeWait] = 2
	tests := []struct {
		name string
		read func() (procnet.Counts, error)
		want map[string]float64 // nil: nothing exported
	}{
		{"counts by type",
			func() (procnet.Counts, error) {
				return procnet.Counts{TCP: tcp, TCP6: tcp6, Unix: procnet.UnixCounts{Connected: 2, Dgram: 1, Other: 1}, Unknown: 4}, nil
			},
			map[string]float64{"tcp": 5, "tcp6": 2, "unix": 4, "unknown": 4}},
		{"nothing when /proc cannot be read",
			func() (procnet.Counts, error) { return procnet.Counts{}, procnet.ErrUnsupported }, nil},
		{"nothing on another error",
			func() (procnet.Counts, error) { return procnet.Counts{}, errors.New("boom") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(socketCollector{read: tt.read}))
			require.Equal(t, len(tt.want), testutil.CollectAndCount(socketCollector{read: tt.read}))
			mfs, err := reg.Gather()
			require.NoError(t, err)
			got := map[string]float64{}
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
				}
			}
			if tt.want == nil {
				require.Empty(t, got)
				return
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestSocketsFamilyLive(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("pg_doorman_sockets is Linux only")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	values := gather(t, New(newDaemon(t)))
	require.GreaterOrEqual(t, values[seriesKey("pg_doorman_sockets", "type", "tcp")], 1.0)
	require.Contains(t, values, seriesKey("pg_doorman_sockets", "type", "unknown"))
}

func TestServersPreparedFamilies(t *testing.T) {
	t.Parallel()
	d := newDaemon(t)
	m := New(d)
	st := &lookup(t, d).Stats
	st.PreparedHits.Add(7)
	st.PreparedMisses.Add(2)
	values := gather(t, m)
	require.Equal(t, 7.0, values[poolKey("pg_doorman_servers_prepared_hits")])
	require.Equal(t, 2.0, values[poolKey("pg_doorman_servers_prepared_misses")])
	require.Equal(t, 7.0, values[poolKey("pg_doorman_prepared_statements_total", "event", "hit")], "the same number as the counter")
}

func TestConnectionCounts(t *testing.T) {
	t.Parallel()
	m := New(newDaemon(t))
	for _, k := range []string{ConnPlain, ConnTLS, ConnTLS, ConnCancel, "replication"} {
		m.ClientConnection(k)
	}
	plain, tls, cancel, other := m.ConnectionCounts()
	require.Equal(t, [4]uint64{1, 2, 1, 1}, [4]uint64{plain, tls, cancel, other})
}
