package drill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func ack(end time.Duration, server string) Event {
	return Event{End: end, Outcome: Acknowledged, Phase: PhaseDone, Server: server}
}

func fail(o Outcome, p Phase, cat string) Event {
	return Event{Outcome: o, Phase: p, Category: cat}
}

func TestSummarizeGap(t *testing.T) {
	t.Parallel()
	s := time.Second
	ms := time.Millisecond
	cases := []struct {
		name      string
		events    []Event
		d         time.Duration
		gap       time.Duration
		gapStart  time.Duration
		newPrimry *Switch
	}{
		{"no acknowledgement: the whole run", []Event{fail(NotSent, PhaseConnect, "refused")}, 5 * s, 5 * s, 0, nil},
		{"steady writes", []Event{ack(100*ms, "A"), ack(250*ms, "A"), ack(400*ms, "A")}, 500 * ms, 150 * ms, 100 * ms, nil},
		{"unsorted input", []Event{ack(400*ms, "A"), ack(100*ms, "A"), ack(250*ms, "A")}, 500 * ms, 150 * ms, 100 * ms, nil},
		{"switchover gap", []Event{ack(100*ms, "A"), ack(200*ms, "A"), ack(1900*ms, "B"), ack(2000*ms, "B")}, 2100 * ms,
			1700 * ms, 200 * ms, &Switch{From: "A", To: "B", LastOnOld: 200 * ms, FirstOnNew: 1900 * ms}},
		{"never recovered: trailing gap", []Event{ack(100*ms, "A"), ack(200*ms, "A")}, 10 * s, 9800 * ms, 200 * ms, nil},
		{"slow first connect: leading gap", []Event{ack(900*ms, "A"), ack(1000*ms, "A")}, 1100 * ms, 900 * ms, 0, nil},
		{"old server answers once more after new one", []Event{ack(100*ms, "A"), ack(1500*ms, "B"), ack(1600*ms, "A"),
			ack(1700*ms, "B"), ack(1800*ms, "B")}, 1900 * ms,
			1400 * ms, 100 * ms, &Switch{From: "A", To: "B", LastOnOld: 1600 * ms, FirstOnNew: 1700 * ms}},
		{"restart in place then back to the first", []Event{ack(100*ms, "A"), ack(800*ms, "A2"), ack(900*ms, "A")}, 1000 * ms,
			700 * ms, 100 * ms, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Summarize(tc.events, tc.d)
			require.Equal(t, tc.gap, got.WriteGap)
			require.Equal(t, tc.gapStart, got.WriteGapStart)
			require.Equal(t, tc.newPrimry, got.NewPrimary)
			require.Equal(t, len(tc.events), got.Events)
		})
	}
}

func TestSummarizeFailuresAndServers(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	events := []Event{
		ack(100*ms, "A"), fail(NotSent, PhaseConnect, "refused"), fail(Unknown, PhaseWait, "closed"),
		fail(NotSent, PhaseConnect, "refused"), fail(Rejected, PhaseWait, "sqlstate_25006"), ack(900*ms, "B"),
		fail(NotSent, PhaseConnect, "read_only_session"), ack(1000*ms, "B"),
	}
	got := Summarize(events, time.Second)
	require.Equal(t, map[Outcome]int{Acknowledged: 3, NotSent: 3, Unknown: 1, Rejected: 1}, got.Outcomes)
	require.Equal(t, []Failure{
		{NotSent, PhaseConnect, "refused", 2},
		{NotSent, PhaseConnect, "read_only_session", 1},
		{Rejected, PhaseWait, "sqlstate_25006", 1},
		{Unknown, PhaseWait, "closed", 1},
	}, got.Failures)
	require.Equal(t, []ServerSpan{{"A", 1, 100 * ms, 100 * ms}, {"B", 2, 900 * ms, 1000 * ms}}, got.Servers)
}
