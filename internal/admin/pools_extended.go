package admin

import (
	"time"
	"unsafe"

	"github.com/doorman-go/doorman/internal/pooler"
)

// quantiles are the percentiles of SHOW POOLS_EXTENDED and of the
// pg_doorman_pools_*_percentile metrics.
var quantiles = [4]float64{0.5, 0.9, 0.95, 0.99}

// extendedSnap is a pool of SHOW POOLS_EXTENDED: SHOW POOLS's snapshot
// plus the latency percentiles (since start, reload or RECONNECT).
type extendedSnap struct {
	poolSnap
	Xact, Query [4]time.Duration // at quantiles
}

func gatherExtended(pools []poolSnap, live []*pooler.Pool) []extendedSnap {
	byKey := make(map[[2]string]*pooler.Pool, len(live))
	for _, p := range live {
		byKey[[2]string{p.Database, p.User}] = p
	}
	out := make([]extendedSnap, 0, len(pools))
	for _, ps := range pools {
		e := extendedSnap{poolSnap: ps}
		if p := byKey[[2]string{ps.Database, ps.User}]; p != nil {
			for i, q := range quantiles {
				e.Xact[i] = p.XactTimes.Quantile(q)
				e.Query[i] = p.QueryTimes.Quantile(q)
			}
		}
		out = append(out, e)
	}
	return out
}

// showPoolsExtended is SHOW POOLS with, after its columns, the pool's
// bytes from and to clients, the mean wait for a server connection since
// the pool was created and the transaction and query latency percentiles,
// all times in milliseconds (numeric). Percentiles come from a log-scale
// histogram: each is the upper bound of its bucket, within about 9 %.
func showPoolsExtended(pools []extendedSnap) resultSet {
	rs := resultSet{Columns: poolsColumns()}
	rs.Columns = append(rs.Columns, int8Col("bytes_received"), int8Col("bytes_sent"), numericCol("avg_wait_time_ms"))
	for _, kind := range []string{"xact", "query"} {
		for _, q := range []string{"p50", "p90", "p95", "p99"} {
			rs.Columns = append(rs.Columns, numericCol(kind+"_"+q+"_ms"))
		}
	}
	for _, p := range pools {
		row := poolsRow(p.poolSnap)
		c := p.Counters
		var avgWait time.Duration
		if c.Waits > 0 {
			avgWait = time.Duration(c.WaitTime/c.Waits) * time.Microsecond
		}
		row = append(row, u8(c.Received), u8(c.Sent), millis(avgWait))
		for _, d := range p.Xact {
			row = append(row, millis(d))
		}
		for _, d := range p.Query {
			row = append(row, millis(d))
		}
		rs.Rows = append(rs.Rows, row)
	}
	return rs
}

// memorySnap is what SHOW POOLS_MEMORY reads of one pool.
type memorySnap struct {
	Database, User     string
	PreparedStatements int   // in the pool cache
	PreparedBytes      int64 // as the cache accounts them
	ServerConns        int   // open: idle, in use and being opened
}

// Fixed sizes behind SHOW POOLS_MEMORY's estimates.
const (
	// serverReadBuffer is the read buffer of a server connection
	// (backend.Conn). Buffers grown for larger messages are counted
	// process-wide by max_memory_usage (pg_doorman_memory_budget_bytes),
	// not per pool.
	serverReadBuffer = 8192 // backend.Conn's protocol.NewReader size
	// histogramBytes are the pool's two latency histograms.
	histogramBytes = 2 * int64(unsafe.Sizeof(pooler.Histogram{}))
)

func gatherMemory(live []*pooler.Pool) []memorySnap {
	out := make([]memorySnap, 0, len(live))
	for _, p := range live {
		m := memorySnap{Database: p.Database, User: p.User, ServerConns: p.Conns().Stats().Total}
		if p.Statements != nil {
			cs := p.Statements.Stats()
			m.PreparedStatements, m.PreparedBytes = cs.Size, cs.Bytes
		}
		out = append(out, m)
	}
	return out
}

// showPoolsMemory is the Rust pg_doorman's SHOW POOLS_MEMORY
// (prepared_statements_count, prepared_statements_bytes) plus an estimate
// of the rest a pool holds: server_read_buffers_bytes is open server
// connections × the 8 KiB read buffer each starts with (a buffer grown for
// a large message, or released while idle, is not seen: the connection's
// owner may be using it right now); histograms_bytes is fixed. The
// statements each server connection keeps prepared are PostgreSQL's memory,
// not ours, and are not counted. total_bytes is the sum.
func showPoolsMemory(pools []memorySnap) resultSet {
	rs := resultSet{Columns: []column{
		textCol("database"), textCol("user"),
		int8Col("prepared_statements_count"), int8Col("prepared_statements_bytes"),
		int8Col("server_connections"), int8Col("server_read_buffers_bytes"),
		int8Col("histograms_bytes"), int8Col("total_bytes"),
	}}
	for _, p := range pools {
		buffers := int64(p.ServerConns) * serverReadBuffer
		rs.Rows = append(rs.Rows, []cell{
			text(p.Database), text(p.User),
			i8(int64(p.PreparedStatements)), i8(p.PreparedBytes),
			i8(int64(p.ServerConns)), i8(buffers),
			i8(histogramBytes), i8(p.PreparedBytes + buffers + histogramBytes),
		})
	}
	return rs
}
