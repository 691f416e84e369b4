package soak

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMixPickFollowsWeights(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mix  Mix
	}{
		{"common", commonMix},
		{"big", bigMix},
		{"one kind", Mix{KindCopyOut: 3}},
		{"common without kills", commonMix.withoutKills()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(1, 2))
			const n = 200000
			var got [numKinds]int
			for range n {
				got[tc.mix.Pick(r)]++
			}
			total := 0
			for _, w := range tc.mix {
				total += w
			}
			for k, w := range tc.mix {
				if w == 0 {
					require.Zero(t, got[k], Kind(k).String())
					continue
				}
				want := float64(n) * float64(w) / float64(total)
				require.InDelta(t, want, float64(got[k]), 0.05*want+50, Kind(k).String())
			}
		})
	}
}

func TestMixPickEmptyPanics(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, "BUG: soak mix has no positive weight", func() { Mix{}.Pick(rand.New(rand.NewPCG(1, 1))) })
}

func TestMixFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		i, n    int
		noKills bool
		want    Mix
	}{
		{"first of 400 reads big results", 0, 400, false, bigMix},
		{"fourth of 400 reads big results", 3, 400, false, bigMix},
		{"fifth of 400 is common", 4, 400, false, commonMix},
		{"one of 50 reads big results", 0, 50, false, bigMix},
		{"second of 50 is common", 1, 50, false, commonMix},
		{"big without kills", 0, 400, true, Mix{KindBig: 9}},
		{"common without kills", 10, 400, true, commonMix.withoutKills()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := mixFor(tc.i, tc.n, tc.noKills)
			require.Equal(t, tc.want, got)
			if tc.noKills {
				for k := range numKinds {
					if k.IsKill() {
						require.Zero(t, got[k], k.String())
					}
				}
			}
		})
	}
	require.Equal(t, Mix{KindBig: 1}, Mix{KindKillIdle: 2}.withoutKills())
}

func TestKindNamesAndKills(t *testing.T) {
	t.Parallel()
	kills := 0
	for k := range numKinds {
		require.NotEmpty(t, k.String())
		if k.IsKill() {
			kills++
		}
	}
	require.Equal(t, 3, kills)
	require.False(t, KindConnect.IsKill())
	require.Equal(t, "kind(99)", Kind(99).String())
	require.Zero(t, commonMix[KindConnect]+bigMix[KindConnect], "logins are counted, never picked")
}
