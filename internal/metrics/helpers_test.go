package metrics

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// seriesKey spells a series as the exposition format does, labels sorted
// by name: name{k1="v1",k2="v2"}. kv holds label name, value pairs.
func seriesKey(name string, kv ...string) string {
	if len(kv)%2 != 0 {
		panic("BUG: seriesKey needs label name, value pairs")
	}
	pairs := make([]string, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		pairs = append(pairs, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// poolKey is seriesKey for the test pool mydb/app.
func poolKey(name string, kv ...string) string {
	all := append(append([]string(nil), kv...), "user", "app", "database", "mydb")
	return seriesKey(name, all...)
}

// gather scrapes the registry into series key → value.
func gather(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			kv := make([]string, 0, 2*len(mt.GetLabel()))
			for _, l := range mt.GetLabel() {
				kv = append(kv, l.GetName(), l.GetValue())
			}
			out[seriesKey(mf.GetName(), kv...)] = value(mf.GetType(), mt)
		}
	}
	return out
}

func value(typ dto.MetricType, mt *dto.Metric) float64 {
	switch typ {
	case dto.MetricType_COUNTER:
		return mt.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return mt.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		return mt.GetUntyped().GetValue()
	case dto.MetricType_SUMMARY:
		return float64(mt.GetSummary().GetSampleCount())
	case dto.MetricType_HISTOGRAM:
		return float64(mt.GetHistogram().GetSampleCount())
	}
	return 0
}
