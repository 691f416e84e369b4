package admin

import (
	"sort"
	"sync"
	"time"
)

// statsPeriod is the shortest window SHOW STATS averages over. PgBouncer
// averages over fixed stats_period windows filled by a timer; the console
// has no timer, so it keeps the samples taken by SHOW STATS itself.
const statsPeriod = 15 * time.Second

// sample is the per-database counters at one instant.
type sample struct {
	at  time.Time
	dbs map[string]counters
}

// statsSampler picks the baseline that averages are computed against: the
// newest sample at least statsPeriod old, or the daemon start (all zero)
// until one exists. The window is thus between statsPeriod and about twice
// that once SHOW STATS is polled regularly (exporters do).
type statsSampler struct {
	mu        sync.Mutex
	base, mid *sample
}

// baseline records cur and returns the sample to average against.
func (s *statsSampler) baseline(cur sample, start time.Time) sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.mid == nil:
		s.mid = &cur
	case cur.at.Sub(s.mid.at) >= statsPeriod:
		s.base, s.mid = s.mid, &cur
	}
	if s.base == nil {
		return sample{at: start}
	}
	return *s.base
}

// compute takes a sample of pools at now and returns SHOW STATS rows.
func (s *statsSampler) compute(pools []poolSnap, now, start time.Time) []statsRow {
	cur := sample{at: now, dbs: sumByDatabase(pools)}
	return computeStats(cur, s.baseline(cur, start))
}

// sumByDatabase adds up the pools of each database.
func sumByDatabase(pools []poolSnap) map[string]counters {
	out := map[string]counters{}
	for _, p := range pools {
		c := out[p.Database]
		c.add(p.Counters)
		out[p.Database] = c
	}
	return out
}

func (c *counters) add(o counters) {
	c.Xacts += o.Xacts
	c.Queries += o.Queries
	c.Received += o.Received
	c.Sent += o.Sent
	c.XactTime += o.XactTime
	c.QueryTime += o.QueryTime
	c.WaitTime += o.WaitTime
	c.Waits += o.Waits
}

// statsRow is one database of SHOW STATS.
type statsRow struct {
	Database string
	Total    counters
	// Per-second rates and per-event averages over the window (µs).
	AvgXacts, AvgQueries, AvgRecv, AvgSent uint64
	AvgXactTime, AvgQueryTime, AvgWaitTime uint64
}

// computeStats builds SHOW STATS rows from the current counters, a
// baseline and the time between them. Counters that went backwards (a pool
// removed and added again) count from zero.
func computeStats(cur, base sample) []statsRow {
	secs := cur.at.Sub(base.at).Seconds()
	names := make([]string, 0, len(cur.dbs))
	for name := range cur.dbs {
		names = append(names, name)
	}
	sort.Strings(names)
	rows := make([]statsRow, 0, len(names))
	for _, name := range names {
		t := cur.dbs[name]
		b := base.dbs[name]
		d := counters{
			Xacts: delta(t.Xacts, b.Xacts), Queries: delta(t.Queries, b.Queries),
			Received: delta(t.Received, b.Received), Sent: delta(t.Sent, b.Sent),
			XactTime: delta(t.XactTime, b.XactTime), QueryTime: delta(t.QueryTime, b.QueryTime),
			WaitTime: delta(t.WaitTime, b.WaitTime), Waits: delta(t.Waits, b.Waits),
		}
		rows = append(rows, statsRow{
			Database: name, Total: t,
			AvgXacts: rate(d.Xacts, secs), AvgQueries: rate(d.Queries, secs),
			AvgRecv: rate(d.Received, secs), AvgSent: rate(d.Sent, secs),
			AvgXactTime: ratio(d.XactTime, d.Xacts), AvgQueryTime: ratio(d.QueryTime, d.Queries),
			AvgWaitTime: ratio(d.WaitTime, d.Waits),
		})
	}
	return rows
}

func delta(cur, base uint64) uint64 {
	if base > cur {
		return cur
	}
	return cur - base
}

func rate(n uint64, secs float64) uint64 {
	if secs < 1 {
		secs = 1
	}
	return uint64(float64(n) / secs)
}

func ratio(total, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return total / n
}

// showStats is PgBouncer's SHOW STATS (one row per database, int8 numbers)
// without total_server_assignment_count and its average.
func showStats(rows []statsRow) resultSet {
	rs := resultSet{Columns: []column{
		textCol("database"),
		int8Col("total_xact_count"), int8Col("total_query_count"),
		int8Col("total_received"), int8Col("total_sent"),
		int8Col("total_xact_time"), int8Col("total_query_time"), int8Col("total_wait_time"),
		int8Col("avg_xact_count"), int8Col("avg_query_count"),
		int8Col("avg_recv"), int8Col("avg_sent"),
		int8Col("avg_xact_time"), int8Col("avg_query_time"), int8Col("avg_wait_time"),
	}}
	for _, r := range rows {
		t := r.Total
		rs.Rows = append(rs.Rows, []cell{
			text(r.Database),
			u8(t.Xacts), u8(t.Queries), u8(t.Received), u8(t.Sent),
			u8(t.XactTime), u8(t.QueryTime), u8(t.WaitTime),
			u8(r.AvgXacts), u8(r.AvgQueries), u8(r.AvgRecv), u8(r.AvgSent),
			u8(r.AvgXactTime), u8(r.AvgQueryTime), u8(r.AvgWaitTime),
		})
	}
	return rs
}
