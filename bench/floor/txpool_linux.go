package floor

import (
	"context"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/doorman-go/doorman/internal/rawio"
)

// txPool is ModeTxPool: one event loop that lends a pool of server
// connections to its clients a transaction at a time, as a transaction
// pooler does, with nothing else a pooler does (see the package comment).
//
// A client logs in through a server connection of its own (its startup
// packet and the authentication exchange pass through), which joins the
// pool at its first ReadyForQuery, or is closed when the pool is full.
// After that, a client's bytes go to whichever server it was lent; the
// server goes back after a ReadyForQuery with status idle that answers the
// client's last Query, Sync or FunctionCall, when no message of the client
// is half sent. A client with no server to be lent waits in a FIFO queue
// holding the bytes it sent, and is not read meanwhile. A hangup or an
// error ends the client (and its server, unless the server is at a
// release point).
type txPool struct {
	size int // most server connections kept after logins
	set  *rawio.PolledEpoll

	mu     sync.Mutex
	adds   []txAdd // handed over by add, taken by the loop
	closed bool

	// Owned by the loop's goroutine.
	ends    []*txEnd // by descriptor
	idle    []*txServer
	queue   []*txClient
	servers int // servers pooled or lent (not logging in)
	buf     []byte
	batch   []*txEnd
	stopped chan struct{}
}

type txAdd struct{ client, server int }

// txEnd is one socket of the loop: a client's or a server's.
type txEnd struct {
	fd       int
	interest uint32
	out      []byte // bytes for this socket it has not taken yet
	scan     scanner
	cl       *txClient // set for a client's socket
	srv      *txServer // set for a server's socket
}

type txClient struct {
	end      txEnd
	srv      *txServer // lent (or its login server)
	login    bool      // logging in through srv
	pending  int       // Query, Sync, FunctionCall not answered yet
	lastSync bool      // the last message that ended was one of those
	held     []byte    // read while waiting for a server
	queued   bool
}

type txServer struct {
	end txEnd
	cl  *txClient
}

func newTxPool(size int) (*txPool, error) {
	p := &txPool{size: max(size, 1), buf: make([]byte, loopBufSize), stopped: make(chan struct{})}
	set, err := rawio.NewPolledEpoll(128, p.dispatch)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	p.set = set
	go p.run()
	return p, nil
}

// loopBufSize is the loop's one read buffer, as the other loops'.
const loopBufSize = 32 << 10

// add hands a logged-in-to-be client and its login server to the loop.
func (p *txPool) add(client, server *net.TCPConn) {
	cfd, sfd, ok := takePair(client, server)
	if !ok {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		rawio.CloseFDs(cfd, sfd)
		return
	}
	p.adds = append(p.adds, txAdd{cfd, sfd})
	p.mu.Unlock()
	p.set.Wake()
}

func (p *txPool) close() {
	p.mu.Lock()
	was := p.closed
	p.closed = true
	p.mu.Unlock()
	if !was {
		p.set.Wake()
	}
	<-p.stopped
}

// run is the loop's goroutine: the set serves events in dispatch until
// close; then every socket is closed, and the set.
func (p *txPool) run() {
	defer close(p.stopped)
	defer func() { _ = p.set.Close() }()
	_ = p.set.Run()
	for _, e := range p.ends {
		if e != nil {
			_ = unix.Close(e.fd)
		}
	}
	p.mu.Lock()
	for _, a := range p.adds {
		rawio.CloseFDs(a.client, a.server)
	}
	p.adds = nil
	p.mu.Unlock()
}

func (p *txPool) dispatch(events []unix.EpollEvent) bool {
	// Look every end up first: an end closed by one event frees a
	// descriptor that a later add may reuse within the batch.
	p.batch = p.batch[:0]
	for i := range events {
		var e *txEnd
		if fd := int(events[i].Fd); !p.set.IsWake(events[i].Fd) && fd < len(p.ends) {
			e = p.ends[fd]
		}
		p.batch = append(p.batch, e)
	}
	for i := range events {
		ev := &events[i]
		if p.set.IsWake(ev.Fd) {
			if !p.woken() {
				return false
			}
			continue
		}
		e := p.batch[i]
		if e == nil || e.fd < 0 {
			continue
		}
		if e.cl != nil {
			p.clientEvent(e.cl, ev.Events)
		} else {
			p.serverEvent(e.srv, ev.Events)
		}
	}
	clear(p.batch)
	return true
}

// woken takes what add handed over; false once close asked.
func (p *txPool) woken() bool {
	p.set.DrainWake()
	p.mu.Lock()
	adds, closed := p.adds, p.closed
	p.adds = nil
	p.mu.Unlock()
	if closed {
		for _, a := range adds {
			rawio.CloseFDs(a.client, a.server)
		}
		return false
	}
	for _, a := range adds {
		c := &txClient{login: true, lastSync: true}
		s := &txServer{cl: c}
		c.srv = s
		c.end = txEnd{fd: a.client, cl: c}
		s.end = txEnd{fd: a.server, srv: s}
		if !p.register(&c.end) || !p.register(&s.end) {
			p.endClient(c, false)
		}
	}
	return true
}

func (p *txPool) register(e *txEnd) bool {
	if e.fd >= len(p.ends) {
		grown := make([]*txEnd, max(e.fd+1, 2*len(p.ends), 64))
		copy(grown, p.ends)
		p.ends = grown
	}
	p.ends[e.fd] = e
	e.interest = unix.EPOLLIN | unix.EPOLLRDHUP
	return p.set.Ctl(unix.EPOLL_CTL_ADD, e.fd, e.interest) == nil
}

// closeEnd takes e's socket out of the loop and closes it.
func (p *txPool) closeEnd(e *txEnd) {
	if e.fd < 0 {
		return
	}
	if p.ends[e.fd] == e {
		p.ends[e.fd] = nil
	}
	_ = unix.Close(e.fd)
	e.fd = -1
	e.out = nil
}

func (p *txPool) clientEvent(c *txClient, events uint32) {
	if events&unix.EPOLLOUT != 0 && !p.flush(&c.end) {
		p.endClient(c, false)
		return
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		if c.end.interest&unix.EPOLLIN == 0 {
			// A hangup while the client is not read (waiting, or its
			// server not taking more): the floor ends it now.
			p.endClient(c, false)
			return
		}
		if !p.readClient(c) {
			return
		}
	}
	p.refresh(c)
}

func (p *txPool) readClient(c *txClient) bool {
	n, errno := rawio.ReadFD(uintptr(c.end.fd), p.buf)
	if errno == unix.EAGAIN {
		return true
	}
	if errno != 0 || n == 0 {
		p.endClient(c, false)
		return false
	}
	b := p.buf[:n]
	r := c.end.scan.feed(b)
	if r.bad {
		p.endClient(c, false)
		return false
	}
	c.pending += r.syncs
	if r.ended {
		c.lastSync = r.lastSync
	}
	if r.terminate {
		// Terminate is the client's last word: the server it holds is
		// given back if the Terminate is all that is unanswered.
		p.endClient(c, !c.login && c.pending == 0 && c.lastSync)
		return false
	}
	if c.srv == nil {
		if s := p.take(); s != nil {
			p.lend(s, c)
		} else {
			c.held = append(c.held[:0], b...)
			c.queued = true
			p.queue = append(p.queue, c)
			return true
		}
	}
	if !p.write(&c.srv.end, b) {
		p.endServer(c.srv)
		return false
	}
	return true
}

func (p *txPool) serverEvent(s *txServer, events uint32) {
	if events&unix.EPOLLOUT != 0 && !p.flush(&s.end) {
		p.endServer(s)
		return
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		if s.end.interest&unix.EPOLLIN == 0 {
			p.endServer(s)
			return
		}
		if !p.readServer(s) {
			return
		}
	}
	if s.cl != nil {
		p.refresh(s.cl)
	} else {
		p.setInterest(&s.end, p.serverInterest(s))
	}
}

func (p *txPool) readServer(s *txServer) bool {
	n, errno := rawio.ReadFD(uintptr(s.end.fd), p.buf)
	if errno == unix.EAGAIN {
		return true
	}
	c := s.cl
	if errno != 0 || n == 0 || c == nil {
		// Gone, or speaking unasked while idle.
		p.endServer(s)
		return false
	}
	b := p.buf[:n]
	r := s.end.scan.feed(b)
	if r.bad {
		p.endServer(s)
		return false
	}
	if !p.write(&c.end, b) {
		p.endClient(c, false)
		return false
	}
	if r.readys == 0 {
		return true
	}
	c.pending = max(c.pending-r.readys, 0)
	if r.status != 'I' || !s.end.scan.boundary() {
		return true
	}
	if c.login {
		// Logged in: the server counts as the pool's from now on. A
		// request the client sent behind its login is answered by it
		// first, and the rule below then releases it.
		c.login = false
		p.servers++
		if c.pending == 0 {
			c.lastSync = true
		}
	}
	if c.pending == 0 && c.lastSync && c.end.scan.boundary() {
		c.srv, s.cl = nil, nil
		p.refresh(c)
		if p.servers > p.size {
			p.servers--
			p.retire(s) // beyond the pool's size: only a login needed it
			return false
		}
		p.giveBack(s)
	}
	return true
}

// take pops the most recently returned idle server, or nil.
func (p *txPool) take() *txServer {
	if len(p.idle) == 0 {
		return nil
	}
	s := p.idle[len(p.idle)-1]
	p.idle[len(p.idle)-1] = nil
	p.idle = p.idle[:len(p.idle)-1]
	return s
}

func (p *txPool) lend(s *txServer, c *txClient) {
	s.cl, c.srv = c, s
}

// giveBack hands s to the oldest waiting client, with the bytes it held,
// or puts it with the idle ones.
func (p *txPool) giveBack(s *txServer) {
	for len(p.queue) > 0 {
		c := p.queue[0]
		copy(p.queue, p.queue[1:])
		p.queue[len(p.queue)-1] = nil
		p.queue = p.queue[:len(p.queue)-1]
		c.queued = false
		p.lend(s, c)
		ok := p.write(&s.end, c.held)
		c.held = c.held[:0]
		if !ok {
			p.endServer(s)
			return
		}
		p.refresh(c)
		return
	}
	p.idle = append(p.idle, s)
	p.setInterest(&s.end, p.serverInterest(s))
}

// retire closes a server the pool has no room for, saying Terminate.
func (p *txPool) retire(s *txServer) {
	_, _ = rawio.WriteFD(uintptr(s.end.fd), []byte{'X', 0, 0, 0, 4})
	p.closeEnd(&s.end)
}

// endServer closes s and the client it was lent to.
func (p *txPool) endServer(s *txServer) {
	if s.end.fd < 0 {
		return
	}
	c := s.cl
	pooled := c == nil || !c.login
	p.closeEnd(&s.end)
	if pooled {
		p.servers--
		for i, t := range p.idle {
			if t == s {
				p.idle = append(p.idle[:i], p.idle[i+1:]...)
				break
			}
		}
	}
	if c != nil {
		c.srv, s.cl = nil, nil
		p.endClient(c, false)
	}
}

// endClient closes c; its server goes back when clean says it may,
// otherwise it is closed too.
func (p *txPool) endClient(c *txClient, clean bool) {
	if c.end.fd < 0 {
		return
	}
	p.closeEnd(&c.end)
	if c.queued {
		for i, q := range p.queue {
			if q == c {
				p.queue = append(p.queue[:i], p.queue[i+1:]...)
				break
			}
		}
		c.queued = false
	}
	s := c.srv
	if s == nil {
		return
	}
	c.srv, s.cl = nil, nil
	if clean && len(s.end.out) == 0 {
		p.giveBack(s)
		return
	}
	if c.login {
		p.closeEnd(&s.end)
		return
	}
	p.endServer(s)
}

// write sends b to e now, keeping what the socket does not take; false on
// a broken socket.
func (p *txPool) write(e *txEnd, b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if len(e.out) > 0 {
		e.out = append(e.out, b...)
		return true
	}
	n, errno := rawio.WriteFD(uintptr(e.fd), b)
	if errno == unix.EAGAIN {
		n = 0
	} else if errno != 0 {
		return false
	}
	if n < len(b) {
		e.out = append(e.out[:0], b[n:]...)
	}
	return true
}

// flush writes what e holds; false on a broken socket.
func (p *txPool) flush(e *txEnd) bool {
	if len(e.out) == 0 {
		return true
	}
	n, errno := rawio.WriteFD(uintptr(e.fd), e.out)
	if errno == unix.EAGAIN {
		return true
	}
	if errno != 0 {
		return false
	}
	e.out = e.out[:copy(e.out, e.out[n:])]
	return true
}

// refresh sets the interests of c and of the server it holds: a socket is
// read only while its peer has taken everything, a waiting client not at
// all, and one with bytes held is watched for room.
func (p *txPool) refresh(c *txClient) {
	if c.end.fd < 0 {
		return
	}
	want := uint32(unix.EPOLLRDHUP)
	if !c.queued && (c.srv == nil || len(c.srv.end.out) == 0) {
		want |= unix.EPOLLIN
	}
	if len(c.end.out) > 0 {
		want |= unix.EPOLLOUT
	}
	p.setInterest(&c.end, want)
	if s := c.srv; s != nil && s.end.fd >= 0 {
		p.setInterest(&s.end, p.serverInterest(s))
	}
}

func (p *txPool) serverInterest(s *txServer) uint32 {
	want := uint32(unix.EPOLLRDHUP)
	if s.cl == nil || len(s.cl.end.out) == 0 {
		want |= unix.EPOLLIN
	}
	if len(s.end.out) > 0 {
		want |= unix.EPOLLOUT
	}
	return want
}

func (p *txPool) setInterest(e *txEnd, want uint32) {
	if e.interest == want || e.fd < 0 {
		return
	}
	e.interest = want
	_ = p.set.Ctl(unix.EPOLL_CTL_MOD, e.fd, want)
}

// login passes client's startup message to a new server connection and
// hands both to the loop; a client that fails it is closed.
func (p *txPool) login(ctx context.Context, client *net.TCPConn, target string) {
	s, err := loginVia(ctx, client, target)
	if err != nil {
		_ = client.Close()
		return
	}
	p.add(client, s)
}
