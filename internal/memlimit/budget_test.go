package memlimit

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBudget(t *testing.T) {
	tests := []struct {
		name     string
		limit    int64
		acquire  []int64
		want     []bool
		used     int64
		refusals uint64
	}{
		{"unlimited", 0, []int64{1 << 40, 1 << 40}, []bool{true, true}, 2 << 40, 0},
		{"fits exactly", 100, []int64{60, 40}, []bool{true, true}, 100, 0},
		{"over", 100, []int64{60, 41, 40}, []bool{true, false, true}, 100, 1},
		{"zero and negative always fit", 10, []int64{10, 0, -5}, []bool{true, true, true}, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.limit)
			for i, n := range tt.acquire {
				require.Equal(t, tt.want[i], b.TryAcquire(n), "acquire %d", n)
			}
			require.Equal(t, tt.used, b.Used())
			require.Equal(t, tt.refusals, b.Refusals())
		})
	}
}

func TestAccount(t *testing.T) {
	b := New(1000)
	a := NewAccount(b)
	require.True(t, a.Grow(600))
	require.False(t, a.Grow(1200), "1200 in all does not fit a budget of 1000")
	require.EqualValues(t, 600, a.Held())
	require.True(t, a.Grow(1000))
	require.EqualValues(t, 1000, b.Used())
	a.Set(8192) // grew without asking: still counted
	require.EqualValues(t, 8192, b.Used())
	a.Set(0)
	require.EqualValues(t, 0, b.Used())
	require.EqualValues(t, 8192, b.Peak())

	var nilAcc Account
	require.True(t, nilAcc.Grow(1<<30))
	nilAcc.Set(0)
}

func TestBudgetConcurrentNeverOverLimit(t *testing.T) {
	b := New(1000)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10000; j++ {
				if b.TryAcquire(300) {
					require.LessOrEqual(t, b.Used(), int64(1000))
					b.Release(300)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, b.Used())
	require.LessOrEqual(t, b.Peak(), int64(1000))
}

func TestReleaseMoreThanAcquiredPanics(t *testing.T) {
	b := New(0)
	require.Panics(t, func() { b.Release(1) })
}

func TestLogDue(t *testing.T) {
	b := New(10)
	t0 := time.Unix(1000, 0)
	require.False(t, b.TryAcquire(11))
	n, ok := b.LogDue(t0)
	require.True(t, ok)
	require.Zero(t, n)
	for i := 0; i < 5; i++ {
		require.False(t, b.TryAcquire(11))
	}
	_, ok = b.LogDue(t0.Add(500 * time.Millisecond))
	require.False(t, ok, "within a second of the last line")
	n, ok = b.LogDue(t0.Add(1500 * time.Millisecond))
	require.True(t, ok)
	require.EqualValues(t, 4, n, "5 refusals since the last line, one of them is this line's")
}
