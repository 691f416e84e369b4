package proxy

import (
	"errors"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/patroni"
	"github.com/doorman-go/doorman/internal/relay"
)

// conn is one forwarded connection from the moment it is routed until it
// ends: it holds its backend's count (active), the open-connections gauge
// and, on the relay, one count of the port's conns. On the relay no
// goroutine waits for it: the relay's loop tells it of the end (Ended, an
// implementation of relay.Events) and the backend's cut reaches it through
// the backend's set of conns.
type conn struct {
	port   *port
	spec   PortSpec
	b      *backend
	gauge  prometheus.Gauge
	client net.Addr
	start  time.Time

	// Guarded by the port state's mu.
	pair *relay.Pair // nil until Add returned
	cut  bool        // the backend was cut while this connection was open
}

// forward moves the bytes of c between client and server: on the relay,
// returning at once, or with pumps (no relay on this system), returning
// when the connection has ended.
func (c *conn) forward(client, server *net.TCPConn) {
	p := c.port
	if p.env.relay == nil {
		wasCut := forwardPumps(client, server, c.b.cut, c.ServerEnded)
		p.state.release(c.b)
		c.finish(wasCut)
		return
	}
	if !p.state.attach(c) {
		// Cut between the dial and now: it never carried a byte.
		_ = client.Close()
		_ = server.Close()
		p.state.release(c.b)
		c.finish(true)
		return
	}
	p.conns.Add(1) // until Ended
	pair, err := p.env.relay.Add(client, server, c)
	if err != nil {
		p.env.metrics.RelayErrors.WithLabelValues(c.spec.Cluster, c.spec.Name).Inc()
		p.env.log.Warn("connection closed: the event loop could not take it", zap.String("cluster", c.spec.Cluster),
			zap.String("port", c.spec.Name), zap.String("backend", c.b.addr), zap.Error(err))
		c.Ended(nil)
		return
	}
	p.state.setPair(c, pair)
}

// ServerEnded is a server that closed the connection before the client
// did: evidence that the leader may be gone. Called on the relay's loop,
// or on forwardPumps' goroutine.
func (c *conn) ServerEnded() {
	if c.port.state.roleOf(c.b) == patroni.RoleLeader && !c.port.state.wasCut(c) {
		c.port.env.suspect(c.spec.Cluster, TriggerServerClosed)
	}
}

// Ended is the end of a connection on the relay, on its loop's goroutine.
// A loop whose epoll set failed ends all its connections: each is counted
// as a relay error, and logged at most once a second per port (a loop may
// hold thousands); any other error is the peers' own (a reset, a broken
// pipe) and ends the connection as an EOF would.
func (c *conn) Ended(err error) {
	if errors.Is(err, relay.ErrLoopFailed) {
		c.port.env.metrics.RelayErrors.WithLabelValues(c.spec.Cluster, c.spec.Name).Inc()
		if n, ok := c.port.loopFailureLogDue(c.port.env.clock.Now()); ok {
			c.port.env.log.Error("connection closed: its event loop failed", zap.String("cluster", c.spec.Cluster),
				zap.String("port", c.spec.Name), zap.String("backend", c.b.addr),
				zap.Int("closed_since_last_line", n), zap.Error(err))
		}
	}
	wasCut := c.port.state.detach(c)
	c.finish(wasCut)
	c.port.conns.Done()
}

// finish counts and logs the end of c; its backend count is released.
func (c *conn) finish(wasCut bool) {
	c.gauge.Dec()
	if !wasCut {
		return
	}
	c.port.env.metrics.Cut.WithLabelValues(c.spec.Cluster, c.spec.Name, string(c.b.reason)).Inc()
	c.port.env.log.Debug("connection cut", zap.String("cluster", c.spec.Cluster), zap.String("port", c.spec.Name),
		zap.String("backend", c.b.addr), zap.String("reason", string(c.b.reason)),
		zap.Stringer("client", c.client), zap.Duration("duration", time.Since(c.start)))
}
