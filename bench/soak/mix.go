package soak

import (
	"fmt"
	"math/rand/v2"
)

// Kind is one sort of work a worker does in one loop iteration.
type Kind int

// The kinds of work, in table order.
const (
	KindSelect     Kind = iota // pgbench -S: one SELECT, simple protocol
	KindTPCB                   // pgbench tpcb-like transaction, extended protocol, unnamed statements
	KindPrepared               // select or tpcb-like through pgx's statement cache (named statements)
	KindCopyIn                 // COPY 1,000 rows in
	KindCopyOut                // COPY 1,000 rows out
	KindBig                    // a 10 MB result read fully
	KindKillIdle               // close the idle connection abruptly
	KindKillInTx               // close it in the middle of a transaction
	KindKillResult             // close it in the middle of a 10 MB result
	KindConnect                // a login; never picked, counted when a worker (re)connects
	numKinds
)

var kindNames = [numKinds]string{
	"select", "tpcb", "prepared", "copy-in", "copy-out", "big-result",
	"kill-idle", "kill-in-tx", "kill-mid-result", "connect",
}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return kindNames[k]
}

// IsKill reports whether the kind ends by killing its own connection.
func (k Kind) IsKill() bool { return k >= KindKillIdle && k <= KindKillResult }

// Mix is the weight of every kind; a kind of weight 0 is never picked.
type Mix [numKinds]int

// Most workers run the common mix. Kills are rare enough that logins
// (SCRAM on both sides) do not dominate the CPU of a 2-core machine.
var commonMix = Mix{
	KindSelect: 50, KindTPCB: 20, KindPrepared: 20, KindCopyIn: 3, KindCopyOut: 3,
	KindKillIdle: 1, KindKillInTx: 2,
}

// A few workers (bigWorkers) read 10 MB results and sometimes die reading one.
var bigMix = Mix{KindBig: 9, KindKillResult: 1}

// bigWorkers is how many of n workers run bigMix: one per hundred, at least one.
func bigWorkers(n int) int { return max(1, n/100) }

// mixFor is the mix of worker i of n, without the kill kinds if noKills.
func mixFor(i, n int, noKills bool) Mix {
	m := commonMix
	if i < bigWorkers(n) {
		m = bigMix
	}
	if noKills {
		m = m.withoutKills()
	}
	return m
}

// withoutKills is m with the kill kinds at weight 0; a mix of only kills
// falls back to reading 10 MB results.
func (m Mix) withoutKills() Mix {
	total := 0
	for k := range numKinds {
		if k.IsKill() {
			m[k] = 0
		}
		total += m[k]
	}
	if total == 0 {
		m[KindBig] = 1
	}
	return m
}

// Pick picks a kind with probability weight/total.
func (m Mix) Pick(r *rand.Rand) Kind {
	total := 0
	for _, w := range m {
		total += w
	}
	if total <= 0 {
		panic("BUG: soak mix has no positive weight")
	}
	n := r.IntN(total)
	for k, w := range m {
		if n < w {
			return Kind(k)
		}
		n -= w
	}
	panic("BUG: unreachable")
}
