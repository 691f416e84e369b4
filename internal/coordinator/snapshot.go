package coordinator

import "strconv"

// Snapshot is one row of SHOW POOL_COORDINATOR plus the waiters count.
type Snapshot struct {
	Database         string
	MaxDBConnections int // max_db_conn
	Current          int // main + reserve permits in use
	ReserveSize      int // reserve_size
	ReserveUsed      int // reserve_used
	Waiting          int // requests parked in phase C
	Counters
}

// Snapshot returns a consistent view of the coordinator.
func (c *Coordinator) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Snapshot{
		Database: c.cfg.Database, MaxDBConnections: c.cfg.MaxDBConnections,
		Current: c.mainUsed + c.reserveUsed, ReserveSize: c.cfg.ReservePoolSize,
		ReserveUsed: c.reserveUsed, Waiting: len(c.waiters), Counters: c.counters,
	}
}

// Columns are the column names of SHOW POOL_COORDINATOR, in order.
func Columns() []string {
	return []string{"database", "max_db_conn", "current", "reserve_size", "reserve_used",
		"evictions", "reserve_acq", "exhaustions"}
}

// Row renders the snapshot as the text cells of Columns.
func (s Snapshot) Row() []string {
	itoa := strconv.Itoa
	utoa := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return []string{s.Database, itoa(s.MaxDBConnections), itoa(s.Current), itoa(s.ReserveSize),
		itoa(s.ReserveUsed), utoa(s.Evictions), utoa(s.ReserveAcquisitions), utoa(s.Exhaustions)}
}

// Metric is one sample: the value of the label type="...".
type Metric struct {
	Type  string
	Value float64
}

// Gauges are the samples of the gauge pg_doorman_pool_coordinator{type, database}.
func (s Snapshot) Gauges() []Metric {
	return []Metric{
		{"connections", float64(s.Current)},
		{"reserve_in_use", float64(s.ReserveUsed)},
		{"max_connections", float64(s.MaxDBConnections)},
		{"reserve_pool_size", float64(s.ReserveSize)},
	}
}

// Totals are the samples of the counter pg_doorman_pool_coordinator_total{type, database}.
func (s Snapshot) Totals() []Metric {
	return []Metric{
		{"evictions", float64(s.Evictions)},
		{"reserve_acquisitions", float64(s.ReserveAcquisitions)},
		{"exhaustions", float64(s.Exhaustions)},
	}
}
