package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/doorman-go/doorman/internal/patroni"
)

// port is one listening address of one cluster. Its spec is swapped by
// reload; its state survives topology updates.
type port struct {
	env   *env
	ln    *net.TCPListener
	state portState
	stop  chan struct{} // closed by close(): ends the accept loop
	conns sync.WaitGroup

	mu       sync.Mutex // guards spec, refusals and loopLog
	spec     PortSpec
	refusals map[Reason]*logLimit
	loopLog  logLimit // connections ended by a failed event loop
}

// logLimit lets a log line through at most once a second and counts the
// occasions in between.
type logLimit struct {
	last       time.Time
	suppressed int
}

// due reports whether a line may be logged at now, and how many occasions
// it stands for (this one and those held back since the last line).
func (l *logLimit) due(now time.Time) (int, bool) {
	if !l.last.IsZero() && now.Sub(l.last) < time.Second {
		l.suppressed++
		return 0, false
	}
	n := l.suppressed + 1
	l.last, l.suppressed = now, 0
	return n, true
}

// loopFailureLogDue is logLimit.due for connections ended by a failed
// event loop.
func (p *port) loopFailureLogDue(now time.Time) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loopLog.due(now)
}

func listenPort(e *env, spec PortSpec) (*port, error) {
	ln, err := net.Listen("tcp", spec.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s (cluster %s port %s): %w", spec.Listen, spec.Cluster, spec.Name, err)
	}
	return &port{
		env: e, ln: ln.(*net.TCPListener), spec: spec, stop: make(chan struct{}),
		refusals: map[Reason]*logLimit{},
	}, nil
}

func (p *port) getSpec() PortSpec {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spec
}

func (p *port) setSpec(s PortSpec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spec = s
}

// serve accepts until close; each connection gets its own goroutine.
func (p *port) serve() {
	var delay time.Duration
	for {
		c, err := p.ln.AcceptTCP()
		if err != nil {
			select {
			case <-p.stop:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: back off instead of spinning, as
			// pg_doorman's accept loop does, so that a port out of
			// descriptors logs about once a second, not twenty times.
			delay = acceptBackoff(delay)
			spec := p.getSpec()
			p.env.metrics.AcceptErrors.WithLabelValues(spec.Cluster, spec.Name).Inc()
			p.env.log.Warn("accept failed", zap.String("listen", spec.Listen), zap.Error(err), zap.Duration("retry_in", delay))
			t := time.NewTimer(delay)
			select {
			case <-p.stop:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		delay = 0
		p.conns.Add(1)
		go p.handle(c)
	}
}

// acceptBackoff is the wait after a failed accept that followed a wait of
// delay (0 after a success): 5 ms, doubling up to a second.
func acceptBackoff(delay time.Duration) time.Duration {
	return min(max(2*delay, 5*time.Millisecond), time.Second)
}

// holdable reports whether a refusal may clear with the next topology: the
// port waits for a leader or a backend, not for its own shutdown.
func holdable(r Reason) bool {
	switch r {
	case ReasonNoTopology, ReasonStaleTopology, ReasonNoLeader, ReasonMultipleLeaders, ReasonLeaderInRecovery, ReasonNoBackends:
		return true
	}
	return false
}

// hold waits for the next topology of the port until deadline; it reports
// false when the deadline passed or the port is closing. The client's
// bytes (its startup packet) wait in the socket; nothing is read or sent.
func (p *port) hold(deadline time.Time) bool {
	wait := time.Until(deadline)
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-p.state.changes():
		return true
	case <-t.C:
		return false
	case <-p.stop:
		return false
	}
}

// handle routes one client: least-connections pick, dial with a timeout,
// on failure the next backend, then forward until the end or a cut.
func (p *port) handle(client *net.TCPConn) {
	defer p.conns.Done()
	spec := p.getSpec()
	m := p.env.metrics
	var tried map[string]bool
	// A connection the port cannot route yet may be held (hold_timeout)
	// until a topology routes it; endHold counts how that ended.
	var holdUntil time.Time
	held := false
	endHold := func(result string) {
		if held {
			held = false
			m.Holding.WithLabelValues(spec.Cluster, spec.Name).Dec()
			m.Held.WithLabelValues(spec.Cluster, spec.Name, result).Inc()
		}
	}
	for {
		b, reason := p.state.pick(p.env.clock.Now(), p.env.maxAge(), tried)
		if b == nil && tried == nil && holdable(reason) && spec.HoldTimeout > 0 {
			if !held {
				held, holdUntil = true, time.Now().Add(spec.HoldTimeout)
				m.Holding.WithLabelValues(spec.Cluster, spec.Name).Inc()
			}
			if p.hold(holdUntil) {
				continue
			}
		}
		if b == nil {
			endHold("refused")
			// Count before closing: whoever sees the close sees the count.
			m.Refused.WithLabelValues(spec.Cluster, spec.Name, string(reason)).Inc()
			p.logRefused(spec, reason, client.RemoteAddr())
			_ = client.Close()
			return
		}
		endHold("routed")
		server, err := p.dial(b.addr)
		if err == nil {
			select {
			case <-b.cut: // cut while dialling: try another backend
				_ = server.Close()
				err = fmt.Errorf("backend cut while connecting: %s", b.reason)
			default:
			}
		}
		if err != nil {
			if p.state.roleOf(b) == patroni.RoleLeader {
				p.env.suspect(spec.Cluster, TriggerConnectFailed)
			}
			p.state.release(b)
			m.ConnectErrors.WithLabelValues(spec.Cluster, spec.Name, b.addr).Inc()
			p.env.log.Warn("backend connect failed, trying the next one",
				zap.String("cluster", spec.Cluster), zap.String("port", spec.Name),
				zap.String("backend", b.addr), zap.String("member", p.state.memberOf(b)), zap.Error(err))
			if tried == nil {
				tried = map[string]bool{}
			}
			tried[b.addr] = true
			continue
		}
		p.run(spec, client, server, b)
		return
	}
}

func (p *port) run(spec PortSpec, client, server *net.TCPConn, b *backend) {
	m := p.env.metrics
	c := &conn{port: p, spec: spec, b: b, client: client.RemoteAddr(), start: time.Now(),
		gauge: m.Connections.WithLabelValues(spec.Cluster, spec.Name, b.addr)}
	c.gauge.Inc()
	m.ConnectionsTotal.WithLabelValues(spec.Cluster, spec.Name, b.addr).Inc()
	c.forward(client, server)
}

func (p *port) dial(addr string) (*net.TCPConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.env.connectTimeout())
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// logRefused logs a refusal at most once a second per reason, with the
// number of refusals it stands for, so a reconnect storm cannot flood logs.
func (p *port) logRefused(spec PortSpec, reason Reason, client net.Addr) {
	p.mu.Lock()
	l := p.refusals[reason]
	if l == nil {
		l = &logLimit{}
		p.refusals[reason] = l
	}
	n, ok := l.due(time.Now())
	p.mu.Unlock()
	if !ok {
		return
	}
	p.env.log.Warn("connection refused", zap.String("cluster", spec.Cluster), zap.String("port", spec.Name),
		zap.String("reason", string(reason)), zap.Stringer("client", client), zap.Int("refused_since_last_line", n))
}

// applyPlan installs a plan and logs and counts what changed.
func (p *port) applyPlan(plan Plan, fetchedAt time.Time) {
	spec := p.getSpec()
	cuts, prev := p.state.apply(plan, fetchedAt)
	log := p.env.log.With(zap.String("cluster", spec.Cluster), zap.String("port", spec.Name))
	for _, c := range cuts {
		if c.active > 0 {
			log.Info("closing connections to a backend that no longer qualifies",
				zap.String("backend", c.addr), zap.String("member", c.member),
				zap.String("reason", string(c.reason)), zap.Int("connections", c.active))
		}
	}
	open := 1.0
	if plan.Refuse != ReasonNone {
		open = 0
	}
	p.env.metrics.PortOpen.WithLabelValues(spec.Cluster, spec.Name).Set(open)
	switch {
	case plan.Refuse != prev && plan.Refuse == ReasonNoBackends:
		// The seed's diagnostics tell operators to look for these words.
		log.Warn("no backends available, port refuses new connections", zap.String("reason", string(plan.Refuse)))
	case plan.Refuse != prev && plan.Refuse != ReasonNone:
		log.Warn("port refuses new connections", zap.String("reason", string(plan.Refuse)))
	case plan.Refuse == ReasonNone && prev != ReasonNone:
		log.Info("port accepts new connections", zap.Int("backends", len(plan.Eligible)))
	}
}

// close stops accepting and, when cutConns, cuts every connection.
func (p *port) close(cutConns bool, reason Reason) {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	_ = p.ln.Close()
	if cutConns {
		p.state.cutAll(reason)
	}
}

// Addr returns the bound address (useful with port 0).
func (p *port) Addr() net.Addr { return p.ln.Addr() }
