package drill

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func ev(tok string, o Outcome) Event { return Event{Token: tok, Outcome: o} }

func TestReconcile(t *testing.T) {
	t.Parallel()
	events := []Event{ev("a", Acknowledged), ev("b", Acknowledged), ev("u1", Unknown), ev("u2", Unknown),
		ev("n", NotSent), ev("r", Rejected)}
	cases := []struct {
		name       string
		stored     map[string]int
		err        error
		want       Reconciliation
		violations int
	}{
		{"clean", map[string]int{"a": 1, "b": 1, "u1": 1},
			nil, Reconciliation{Done: true, Acknowledged: 2, Unknown: 2, UnknownCommitted: 1, UnknownAbsent: 1}, 0},
		{"acknowledged lost", map[string]int{"a": 1},
			nil, Reconciliation{Done: true, Acknowledged: 2, AckMissing: 1, Unknown: 2, UnknownAbsent: 2, MissingTokens: []string{"b"}}, 1},
		{"duplicate acknowledged and unknown", map[string]int{"a": 2, "b": 1, "u2": 3},
			nil, Reconciliation{Done: true, Acknowledged: 2, Unknown: 2, UnknownCommitted: 1, UnknownAbsent: 1, Duplicates: 2}, 2},
		{"not sent but stored", map[string]int{"a": 1, "b": 1, "n": 1, "r": 1},
			nil, Reconciliation{Done: true, Acknowledged: 2, Unknown: 2, UnknownAbsent: 2, FailedCommitted: 2}, 2},
		{"foreign row", map[string]int{"a": 1, "b": 1, "zz": 1},
			nil, Reconciliation{Done: true, Acknowledged: 2, Unknown: 2, UnknownAbsent: 2, Foreign: 1}, 1},
		{"lookup failed", nil, errors.New("no primary"),
			Reconciliation{Error: "no primary", Acknowledged: 2, Unknown: 2, Unreconciled: 2}, 2},
		{"empty table", map[string]int{},
			nil, Reconciliation{Done: true, Acknowledged: 2, AckMissing: 2, Unknown: 2, UnknownAbsent: 2, MissingTokens: []string{"a", "b"}}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Reconcile(events, tc.stored, tc.err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.violations, got.Violations())
		})
	}
}
