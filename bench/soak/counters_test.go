package soak

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrorShape(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"big result after 4084 rows: ERROR: canceling statement due to user request (SQLSTATE 57014)",
			"big result after # rows: ERROR: canceling statement due to user request (SQLSTATE 57014)"},
		{"select aid 275575: ERROR: x (SQLSTATE 40P01)", "select aid #: ERROR: x (SQLSTATE 40P01)"},
		{"dial tcp 127.0.0.1:6432: connect: connection refused", "dial tcp #.#.#.#:#: connect: connection refused"},
		{"no numbers", "no numbers"},
		{"SQLSTATE 1", "SQLSTATE #"},
		{"", ""},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, errorShape(tc.in), tc.in)
	}
}

func TestCountersGroupErrorsByShape(t *testing.T) {
	t.Parallel()
	var c Counters
	require.True(t, c.Add(KindSelect, Unexpected, errors.New("select aid 1: boom")))
	require.False(t, c.Add(KindSelect, Unexpected, errors.New("select aid 2: boom")))
	require.True(t, c.Add(KindTPCB, Unexpected, errors.New("select aid 3: boom")), "another kind is another row")
	require.False(t, c.Add(KindSelect, OK, nil))
	require.False(t, c.Add(KindKillIdle, Expected, errors.New("killed")))
	require.False(t, c.Add(KindSelect, Cut, errors.New("context canceled")))

	tot := c.Snapshot()
	require.Equal(t, int64(1), tot.OK[KindSelect])
	require.Equal(t, int64(2), tot.Unexpected[KindSelect])
	require.Equal(t, int64(1), tot.Expected[KindKillIdle])
	require.Equal(t, int64(3), Sum(tot.Unexpected))
	require.Equal(t, []ErrorText{
		{Kind: KindSelect, Text: "select aid 1: boom", Count: 2},
		{Kind: KindTPCB, Text: "select aid 3: boom", Count: 1},
	}, c.ErrorTexts())

	later := tot
	later.OK[KindSelect] += 5
	require.Equal(t, int64(5), later.Sub(tot).OK[KindSelect])
}

func TestCountersBoundTexts(t *testing.T) {
	t.Parallel()
	var c Counters
	var wg sync.WaitGroup
	for i := range 2 * maxErrorTexts {
		wg.Go(func() { c.Add(KindCopyIn, Unexpected, fmt.Errorf("shape %s", strings.Repeat("x", i))) })
	}
	wg.Wait()
	texts := c.ErrorTexts()
	require.Len(t, texts, maxErrorTexts+1)
	var n int64
	for _, e := range texts {
		n += e.Count
	}
	require.Equal(t, int64(2*maxErrorTexts), n)
	require.Equal(t, int64(2*maxErrorTexts), c.Snapshot().Unexpected[KindCopyIn])
	require.False(t, c.Add(KindCopyIn, Unexpected, nil), "past the bound, new shapes go to the overflow row")
	long := errors.New(strings.Repeat("y", 1000))
	var d Counters
	d.Add(KindBig, Unexpected, long)
	require.Len(t, d.ErrorTexts()[0].Text, 303)
}

func TestClassify(t *testing.T) {
	t.Parallel()
	killed := afterKill("ping", errors.New("use of closed network connection"))
	tests := []struct {
		name string
		kind Kind
		err  error
		want Outcome
	}{
		{"success", KindSelect, nil, OK},
		{"kill provoked its error", KindKillIdle, killed, Expected},
		{"kill in tx provoked its error", KindKillInTx, killed, Expected},
		{"kill that did not take", KindKillIdle, afterKill("ping", nil), Unexpected},
		{"kill failing before the kill", KindKillInTx, errors.New("begin: boom"), Unexpected},
		{"errKilled outside a kill kind", KindSelect, killed, Unexpected},
		{"plain error", KindTPCB, errors.New("tpcb update 3: ERROR"), Unexpected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, classify(tc.kind, tc.err))
		})
	}
}
