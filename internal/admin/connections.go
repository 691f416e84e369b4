package admin

// connectionCounter is what the metrics exporter (daemon.Daemon.Metrics)
// offers for SHOW CONNECTIONS: the counts behind pg_doorman_connection_count.
type connectionCounter interface {
	ConnectionCounts() (plain, tls, cancel, other uint64)
}

// connectionsSnap feeds SHOW CONNECTIONS.
type connectionsSnap struct {
	Plain, TLS, Cancel, Other uint64 // since start
	Clients                   int64  // open client sockets now
	Servers                   int    // open server connections now, all pools
}

func (c *Console) gatherConnections() connectionsSnap {
	var s connectionsSnap
	if cc, ok := c.d.Metrics().(connectionCounter); ok {
		s.Plain, s.TLS, s.Cancel, s.Other = cc.ConnectionCounts()
	}
	s.Clients = c.d.ConnCount()
	for _, p := range c.d.Pools.Pools() {
		s.Servers += p.Conns().Stats().Total
	}
	return s
}

// showConnections is the Rust pg_doorman's SHOW CONNECTIONS (total,
// errors, tls, plain, cancel: client connections since start by what their
// first packet asked for, the numbers of pg_doorman_connection_count) plus
// the clients and server connections open now. errors are connections of
// another kind, which the Rust pg_doorman derives as total minus the rest;
// connections that never send a packet are not counted at all.
func showConnections(s connectionsSnap) resultSet {
	total := s.Plain + s.TLS + s.Cancel + s.Other
	return resultSet{
		Columns: []column{
			int8Col("total"), int8Col("errors"), int8Col("tls"), int8Col("plain"), int8Col("cancel"),
			int8Col("clients"), int8Col("servers"),
		},
		Rows: [][]cell{{u8(total), u8(s.Other), u8(s.TLS), u8(s.Plain), u8(s.Cancel), i8(s.Clients), i4(s.Servers)}},
	}
}
