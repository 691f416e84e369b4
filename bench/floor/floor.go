package floor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/doorman-go/doorman/internal/rawio"
	"github.com/doorman-go/doorman/internal/relay"
)

// Mode is how a forwarder moves bytes; see the package comment.
type Mode string

// The forwarder shapes.
const (
	ModeGoroutines     Mode = "goroutines"
	ModeEpollThread    Mode = "epoll-thread"
	ModeEpollNetpoller Mode = "epoll-netpoller"
	ModeTxPool         Mode = "txpool"
	ModeUring          Mode = "io-uring"
)

// Modes lists every Mode, in the order reports show them.
var Modes = []Mode{ModeGoroutines, ModeEpollThread, ModeEpollNetpoller, ModeTxPool, ModeUring}

// ParseMode returns the Mode named s.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown forwarder mode %q (want goroutines, epoll-thread, epoll-netpoller, txpool or io-uring)", s)
}

// copyBufSize is the read size of ModeGoroutines, as the event loops' buffer.
const copyBufSize = 64 << 10

// Config says how Serve forwards.
type Config struct {
	Mode Mode
	// Loops is how many event loops ModeEpollThread and ModeEpollNetpoller
	// run (at least one); the connections are dealt to them in turn.
	// ModeTxPool runs one, which owns its pool.
	Loops int
	// PoolSize is how many server connections ModeTxPool keeps (at least
	// one); the other modes give every client its own.
	PoolSize int
}

// Serve accepts on ln and forwards every connection to target (a TCP
// address) until ctx ends, then closes ln and every connection and returns
// nil.
func Serve(ctx context.Context, ln net.Listener, target string, cfg Config) error {
	var (
		fw  forwarder
		err error
	)
	switch cfg.Mode {
	case ModeGoroutines:
		fw = newGoroutines()
	case ModeEpollThread:
		fw, err = newLoops(max(cfg.Loops, 1))
	case ModeEpollNetpoller:
		fw, err = newRelayed(max(cfg.Loops, 1))
	case ModeTxPool:
		fw, err = newTxPool(max(cfg.PoolSize, 1))
	case ModeUring:
		fw, err = newUring()
	default:
		err = fmt.Errorf("unknown forwarder mode %q", cfg.Mode)
	}
	if err != nil {
		_ = ln.Close()
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var (
		d      net.Dialer
		logins sync.WaitGroup
	)
	lg, _ := fw.(loginForwarder)
	for {
		c, err := ln.Accept()
		if err != nil {
			logins.Wait()
			fw.close()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		if lg != nil {
			logins.Go(func() { lg.login(ctx, c.(*net.TCPConn), target) })
			continue
		}
		s, err := d.DialContext(ctx, "tcp", target)
		if err != nil {
			_ = c.Close()
			continue // the client sees its connection closed
		}
		fw.add(c.(*net.TCPConn), s.(*net.TCPConn))
	}
}

// forwarder is one of the shapes: add hands it a connected pair, close
// ends every pair and waits for its goroutines.
type forwarder interface {
	add(client, server *net.TCPConn)
	close()
}

// loginForwarder is a forwarder that reads the client's startup packet
// before it connects to target (ModeTxPool).
type loginForwarder interface {
	forwarder
	login(ctx context.Context, client *net.TCPConn, target string)
}

// relayed is ModeEpollNetpoller: patroni_proxy's event loops
// (internal/relay) themselves.
type relayed struct{ r *relay.Relay }

func newRelayed(loops int) (*relayed, error) {
	r, err := relay.New(loops)
	if err != nil {
		return nil, err
	}
	return &relayed{r: r}, nil
}

// add hands the pair to the relay; a pair it cannot take is closed, and
// the client sees that.
func (f *relayed) add(client, server *net.TCPConn) { _, _ = f.r.Add(client, server, nil) }

func (f *relayed) close() { f.r.Close() }

// goroutines is ModeGoroutines.
type goroutines struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[*net.TCPConn]struct{}
	done  bool
}

func newGoroutines() *goroutines { return &goroutines{conns: map[*net.TCPConn]struct{}{}} }

func (g *goroutines) add(client, server *net.TCPConn) {
	g.mu.Lock()
	if g.done {
		g.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	g.conns[client], g.conns[server] = struct{}{}, struct{}{}
	g.mu.Unlock()
	var ends sync.WaitGroup
	ends.Add(2)
	g.wg.Add(3)
	go g.pipe(server, client, &ends)
	go g.pipe(client, server, &ends)
	go func() {
		defer g.wg.Done()
		ends.Wait()
		g.drop(client, server)
	}()
}

// pipe copies src to dst until src ends, then half-closes dst; an error
// closes both, which ends the other direction too.
func (g *goroutines) pipe(dst, src *net.TCPConn, ends *sync.WaitGroup) {
	defer g.wg.Done()
	defer ends.Done()
	buf := make([]byte, copyBufSize)
	// rawio.Conn hides the TCPConn's ReadFrom and WriteTo, so io.CopyBuffer
	// uses buf with rawio's raw read and write calls (no splice).
	_, err := io.CopyBuffer(rawio.Wrap(dst), rawio.Wrap(src), buf)
	if err == nil {
		err = dst.CloseWrite()
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		_ = dst.Close()
		_ = src.Close()
	}
}

func (g *goroutines) drop(conns ...*net.TCPConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(g.conns, c)
	}
}

func (g *goroutines) close() {
	g.mu.Lock()
	g.done = true
	for c := range g.conns {
		_ = c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}
