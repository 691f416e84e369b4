package admin

import (
	"github.com/doorman-go/doorman/internal/procnet"
)

// connectionCounter is what the metrics exporter (daemon.Hooks.Metrics)
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
	if cc, ok := c.d.Hooks.Metrics.(connectionCounter); ok {
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

// showSocketStates is the seed's SHOW SOCKETS: one row counting this
// process's sockets by protocol and state, from /proc/net/tcp, tcp6 and
// unix (Linux only). Columns follow the Rust pg_doorman: tcp_<state> and
// tcp6_<state> for the kernel's TCP states, unix stream sockets by state
// plus unix_dgram and unix_seq_packet, and unknown (our sockets in none of
// those tables, such as UDP). The Rust version's second tcp_new_syn_recv /
// tcp_bound_inactive pair is tcp6_ here.
func showSocketStates(c procnet.Counts) resultSet {
	var rs resultSet
	var row []cell
	for _, t := range []struct {
		prefix string
		n      *procnet.TCPCounts
	}{{"tcp_", &c.TCP}, {"tcp6_", &c.TCP6}} {
		for st := procnet.TCPEstablished; st < len(procnet.TCPStateNames); st++ {
			rs.Columns = append(rs.Columns, int8Col(t.prefix+procnet.TCPStateNames[st]))
			row = append(row, i4(t.n[st]))
		}
	}
	u := c.Unix
	for _, v := range []struct {
		name string
		n    int
	}{
		{"unix_free", u.Free}, {"unix_unconnected", u.Unconnected}, {"unix_connecting", u.Connecting},
		{"unix_connected", u.Connected}, {"unix_disconnecting", u.Disconnecting},
		{"unix_dgram", u.Dgram}, {"unix_seq_packet", u.SeqPacket},
		// Sockets in a state or of a type the tables did not have when this
		// was written count as unknown.
		{"unknown", c.Unknown + u.Other + c.TCP[0] + c.TCP6[0]},
	} {
		rs.Columns = append(rs.Columns, int8Col(v.name))
		row = append(row, i4(v.n))
	}
	rs.Rows = [][]cell{row}
	return rs
}
