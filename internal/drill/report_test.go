package drill

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReportOutputs(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	events := []Event{ack(100*ms, "127.0.1.1 t0"), fail(Unknown, PhaseWait, "closed"), ack(1800*ms, "127.0.1.2 t1")}
	events[0].Token, events[1].Token, events[2].Token = "a", "u", "b"
	cases := []struct {
		name   string
		stored map[string]int
		err    error
		table  []string
	}{
		{"reconciled", map[string]int{"a": 1, "b": 1}, nil, []string{"acknowledged missing 0", "unknown absent 1",
			"new primary 127.0.1.2 t1", "first ack on new 1.800 s (+1.700 s)", "unknown wait closed 1"}},
		{"lookup failed", nil, errors.New("no primary"), []string{"reconciliation FAILED: no primary", "unreconciled 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &Report{Table: "doorman_drill_x", Workers: 2, Events: events,
				Summary: Summarize(events, 2*time.Second), Reconciliation: Reconcile(events, tc.stored, tc.err)}
			var tb bytes.Buffer
			require.NoError(t, r.WriteTable(&tb))
			var lines []string // columns collapsed to one space
			for _, l := range strings.Split(tb.String(), "\n") {
				lines = append(lines, strings.Join(strings.Fields(l), " "))
			}
			for _, want := range tc.table {
				require.Contains(t, lines, want)
			}
			var jb bytes.Buffer
			require.NoError(t, r.WriteJSON(&jb, false))
			var back Report
			require.NoError(t, json.Unmarshal(jb.Bytes(), &back))
			require.Nil(t, back.Events, "events only on request")
			require.Equal(t, r.Summary, back.Summary)
			require.Equal(t, r.Reconciliation, back.Reconciliation)
			jb.Reset()
			require.NoError(t, r.WriteJSON(&jb, true))
			require.NoError(t, json.Unmarshal(jb.Bytes(), &back))
			require.Equal(t, events, back.Events)
		})
	}
}
