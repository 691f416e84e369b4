package admin

import (
	"github.com/doorman-go/doorman/internal/procnet"
)

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
