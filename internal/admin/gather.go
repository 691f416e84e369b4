package admin

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/doorman-go/doorman/internal/backend"
	"github.com/doorman-go/doorman/internal/pool"
	"github.com/doorman-go/doorman/internal/pooler"
	"github.com/doorman-go/doorman/internal/session"
)

// poolSnap is what the SHOW commands need of one (database, user) pool.
type poolSnap struct {
	Database, User string
	Mode           string
	Conns          pool.Stats
	// Clients of this pool by state: ClActive counts idle and active ones,
	// as PgBouncer's cl_active does; ClIdle is the part of ClActive that
	// holds no server connection.
	ClActive, ClWaiting, ClIdle int
	// SvUsed are the idle server connections that sat idle longer than
	// server_idle_check_timeout: they are probed before their next use
	// (PgBouncer's SV_USED). Conns.Idle still counts them; showPools
	// subtracts them from sv_idle.
	SvUsed int

	Host             string
	Port             int
	ServerDatabase   string
	PoolSize         int
	MinPoolSize      int
	ReservePool      int
	MaxDBConnections int
	ServerLifetime   time.Duration

	Counters counters
}

// counters are the cumulative SHOW STATS counters (times in µs).
type counters struct {
	Xacts, Queries, Received, Sent, XactTime, QueryTime, WaitTime, Waits uint64
}

// socketSnap is one row of SHOW CLIENTS or SHOW SERVERS.
type socketSnap struct {
	Type                   string // "C" or "S"
	User, Database, State  string
	Addr                   string
	Port                   int
	LocalAddr              string
	LocalPort              int
	ConnectTime, Request   time.Time
	Wait                   time.Duration
	Ptr, Link              string
	RemotePID              int
	TLS                    string
	AppName                string
	PreparedStatementCount int
}

// attached is a server connection held by a client session.
type attached struct {
	session *session.Session
	conn    *pooler.Conn
}

// sessionView is one pass over the client sessions. Only sessions past
// login are asked for their pool, server or admin flag: those fields are
// written during login, before the state leaves "login" (an atomic store
// that orders them before our load).
type sessionView struct {
	all      []*session.Session
	byPool   map[*pooler.Pool]*[3]int // [active, waiting, idle]
	attached map[*pooler.Pool][]attached
}

func viewSessions(r *session.Registry) sessionView {
	v := sessionView{all: r.List(), byPool: map[*pooler.Pool]*[3]int{}, attached: map[*pooler.Pool][]attached{}}
	for _, s := range v.all {
		st := s.State()
		if st == session.StateLogin || s.Admin {
			continue
		}
		p := s.Pool()
		if p == nil {
			continue
		}
		n := v.byPool[p]
		if n == nil {
			n = new([3]int)
			v.byPool[p] = n
		}
		srv := s.Server()
		switch {
		case st == session.StateWaiting:
			n[1]++
		case srv == nil:
			n[0]++
			n[2]++
		default:
			n[0]++
		}
		if srv != nil {
			v.attached[p] = append(v.attached[p], attached{session: s, conn: srv})
		}
	}
	return v
}

func (c *Console) gatherPools(v sessionView) []poolSnap {
	pools := c.d.Pools.Pools()
	out := make([]poolSnap, 0, len(pools))
	now := c.now()
	for _, p := range pools {
		s := p.Settings()
		ps := poolSnap{
			Database: p.Database, User: p.User, Mode: s.Mode(),
			Conns:            p.Conns().Stats(),
			SvUsed:           countUsed(p.Conns().IdleSnapshot(), p.Conns().Config().IdleCheckTimeout, now),
			Host:             s.DB.ServerHost,
			Port:             s.DB.ServerPort,
			ServerDatabase:   s.DB.ServerDatabase,
			PoolSize:         s.User.PoolSize,
			MinPoolSize:      s.User.MinPoolSize,
			ReservePool:      s.DB.ReservePoolSize,
			MaxDBConnections: s.DB.MaxDBConnections,
			ServerLifetime:   s.User.ServerLifetime,
			Counters:         readCounters(&p.Stats),
		}
		if n := v.byPool[p]; n != nil {
			ps.ClActive, ps.ClWaiting, ps.ClIdle = n[0], n[1], n[2]
		}
		out = append(out, ps)
	}
	return out
}

// countUsed counts the idle connections a checkout would probe first:
// those idle longer than checkAfter (0 or less: never probed, none).
func countUsed[T pool.Resource](idle []pool.IdleConn[T], checkAfter time.Duration, now time.Time) int {
	if checkAfter <= 0 {
		return 0
	}
	n := 0
	for _, ic := range idle {
		if now.Sub(ic.ReturnedAt) >= checkAfter {
			n++
		}
	}
	return n
}

func readCounters(s *pooler.Stats) counters {
	return counters{
		Xacts: s.XactCount.Load(), Queries: s.QueryCount.Load(),
		Received: s.BytesReceived.Load(), Sent: s.BytesSent.Load(),
		XactTime: s.XactTime.Load(), QueryTime: s.QueryTime.Load(),
		WaitTime: s.WaitTime.Load(), Waits: s.WaitCount.Load(),
	}
}

// gatherClients lists every client session, admin sessions included.
func (c *Console) gatherClients(v sessionView) []socketSnap {
	listenPort := c.d.Config().General.Port
	now := c.now()
	out := make([]socketSnap, 0, len(v.all))
	for _, s := range v.all {
		st := s.State()
		row := socketSnap{
			Type: "C", User: s.User, Database: s.Database, State: st,
			ConnectTime: s.ConnectedAt, Request: s.ConnectedAt,
			Ptr: fmt.Sprintf("%p", s), AppName: s.AppName, TLS: s.TLS(),
		}
		row.Addr, row.Port = splitAddr(s.RemoteAddr, listenPort)
		if nc := s.Conn(); nc != nil {
			row.LocalAddr, row.LocalPort = splitAddr(nc.LocalAddr(), listenPort)
		}
		if st != session.StateLogin {
			if srv := s.Server(); srv != nil {
				row.Link = fmt.Sprintf("%p", srv.Value)
			}
			row.PreparedStatementCount = s.PreparedStatements()
			row.Request, row.Wait = s.RequestTimes(now)
		}
		out = append(out, row)
	}
	return out
}

// gatherServers lists server connections: those attached to clients
// ("active") and the idle ones. Connections checked out for other reasons
// (being opened, probed, or fetching server parameters) are not listed.
func (c *Console) gatherServers(v sessionView) []socketSnap {
	var out []socketSnap
	now := c.now()
	for _, p := range c.d.Pools.Pools() {
		s := p.Settings()
		for _, a := range v.attached[p] {
			row := serverRow(p, s, a.conn.Value, "active", a.conn.CreatedAt())
			row.Link = fmt.Sprintf("%p", a.session)
			row.Request, _ = a.session.RequestTimes(now) // its client's latest request
			out = append(out, row)
		}
		for _, ic := range p.Conns().IdleSnapshot() {
			row := serverRow(p, s, ic.Value, "idle", ic.CreatedAt)
			row.Request = ic.ReturnedAt
			out = append(out, row)
		}
	}
	return out
}

// serverRow reads only the fields of a backend connection that never
// change after it is opened, and its prepared statements' Count (an
// atomic): it may be in use by a session right now.
func serverRow(p *pooler.Pool, s *pooler.Settings, bc *backend.Conn, state string, created time.Time) socketSnap {
	row := socketSnap{
		Type: "S", User: p.User, Database: p.Database, State: state,
		ConnectTime: created, Request: created,
		Ptr: fmt.Sprintf("%p", bc), RemotePID: int(bc.PID), AppName: s.DB.ApplicationName,
		TLS: bc.TLS,
	}
	if bc.Network == "unix" {
		row.Addr, row.Port = "unix", s.DB.ServerPort
	} else if host, port, err := net.SplitHostPort(bc.Address); err == nil {
		row.Addr = host
		row.Port, _ = strconv.Atoi(port)
	}
	if nc := bc.NetConn(); nc != nil {
		row.LocalAddr, row.LocalPort = splitAddr(nc.LocalAddr(), 0)
	}
	if bc.Prepared != nil { // set once, before the connection joins its pool
		row.PreparedStatementCount = bc.Prepared.Count()
	}
	return row
}

// splitAddr renders an address as PgBouncer does: IP and port for TCP,
// "unix" and the listen port for unix sockets.
func splitAddr(a net.Addr, unixPort int) (string, int) {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.String(), a.Port
	case *net.UnixAddr:
		return "unix", unixPort
	case nil:
		return "", 0
	}
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String(), 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}
