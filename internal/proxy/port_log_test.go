package proxy

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestPortRefusalLines: a port that starts refusing logs it once per
// change, in the words the seed's diagnostics tell operators to look for
// when nothing qualifies ("no backends available"), and its reopening.
func TestPortRefusalLines(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	e := &env{log: zap.New(core), metrics: NewMetrics(prometheus.NewRegistry())}
	p := &port{env: e, spec: PortSpec{Cluster: "c", Name: "replica"}, refusals: map[Reason]*logLimit{}}
	now := time.Now()
	steps := []struct {
		plan Plan
		want string // "" = no line
	}{
		{Plan{Refuse: ReasonNoBackends}, "no backends available, port refuses new connections"},
		{Plan{Refuse: ReasonNoBackends}, ""},
		{Plan{Refuse: ReasonNoLeader}, "port refuses new connections"},
		{Plan{Eligible: []Target{{Addr: "a:1"}}, Keep: map[string]bool{"a:1": true}}, "port accepts new connections"},
	}
	for i, s := range steps {
		logs.TakeAll()
		p.applyPlan(s.plan, now)
		got := logs.TakeAll()
		if s.want == "" {
			require.Empty(t, got, "step %d", i)
			continue
		}
		require.Len(t, got, 1, "step %d", i)
		require.Equal(t, s.want, got[0].Message, "step %d", i)
		if s.plan.Refuse != ReasonNone {
			require.Equal(t, string(s.plan.Refuse), got[0].ContextMap()["reason"])
		}
	}
}
