package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Memory is a process's resident set from /proc/<pid>/status, in bytes.
type Memory struct {
	RSS  int64 // VmRSS: now
	Peak int64 // VmHWM: the high-water mark since start
}

// readMemory reads /proc/<pid>/status.
func readMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	return parseStatus(f)
}

// parseStatus reads the VmRSS and VmHWM lines ("VmRSS:	  10240 kB").
func parseStatus(r io.Reader) (Memory, error) {
	var m Memory
	var seen int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return m, fmt.Errorf("status line %q: want <number> kB", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("status line %q: %w", sc.Text(), err)
		}
		if key == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.Peak = kb << 10
		}
		seen++
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("read status: %w", err)
	}
	if seen != 2 {
		return m, fmt.Errorf("status has no VmRSS or VmHWM line")
	}
	return m, nil
}

// IdleResult is the memory a pooler needed for Clients idle clients.
type IdleResult struct {
	Pooler      string
	Clients     int    // asked for
	Opened      int    // connected and authenticated
	Started     Memory // before the warm-up client
	Before      Memory // with the warm-up client connected, idleHold after it
	AtOnce      Memory // with all clients, as soon as it stopped moving
	After       Memory // with all clients, idleHold after the last login
	ConnectTime time.Duration
	Err         string // first connect error, "" when all opened
	AtLimit     bool   `json:",omitempty"` // Clients is the "max" count: as many as the open-file limit allows
}

// PerClient is the RSS growth per opened client, in bytes.
func (r IdleResult) PerClient() float64 {
	if r.Opened == 0 {
		return 0
	}
	return float64(r.After.RSS-r.Before.RSS) / float64(r.Opened)
}

// PerClientAtOnce is PerClient as soon as the RSS stopped moving after the
// logins, before idleHold.
func (r IdleResult) PerClientAtOnce() float64 {
	if r.Opened == 0 {
		return 0
	}
	return float64(r.AtOnce.RSS-r.Before.RSS) / float64(r.Opened)
}

// idleConnectWorkers is how many logins run at once: enough to finish
// quickly, few enough not to trip the poolers' login rate limits.
const idleConnectWorkers = 32

// settleTimeout bounds waiting for the RSS to stop moving.
const settleTimeout = 5 * time.Second

// idleHold is how long the clients stay idle before the reading that
// counts: a pooler that gives memory back once a burst is over (pg_doorman
// looks every 5 s, internal/memreturn) has had two looks by then. Both
// poolers get the same hold, before "RSS before" too.
const idleHold = 12 * time.Second

// FirstClient is the RSS growth of the warm-up client, in bytes: what the
// first login costs once (the pooler's first server connection and its
// buffers, the pool itself), which the per-client figure leaves out.
func (r IdleResult) FirstClient() int64 { return r.Before.RSS - r.Started.RSS }

// measureIdle opens one warm-up connection to p, then n authenticated
// connections, leaves them idle, reads the pooler's memory and closes them.
// The warm-up connection makes the pooler open its first server connection
// before the "before" reading, so that what the n clients add is their
// own cost (internal/session's TestParkedClientMemory warms up the same way).
func measureIdle(ctx context.Context, p *pooler, n int) (IdleResult, error) {
	res := IdleResult{Pooler: p.name, Clients: n}
	var err error
	if res.Started, err = readMemory(p.proc.PID()); err != nil {
		return res, err
	}
	warm, err := pgconn.Connect(ctx, p.dsn(benchDB))
	if err != nil {
		return res, fmt.Errorf("warm-up client: %w", err)
	}
	defer func() { _ = warm.Close(ctx) }()
	if err := warm.Exec(ctx, "SELECT 1").Close(); err != nil {
		return res, fmt.Errorf("warm-up client: %w", err)
	}
	if err := sleepCtx(ctx, idleHold); err != nil {
		return res, err
	}
	if res.Before, err = settledMemory(ctx, p.proc.PID()); err != nil {
		return res, err
	}
	start := time.Now()
	conns, firstErr := openIdle(ctx, p.dsn(benchDB), n)
	res.ConnectTime = time.Since(start)
	res.Opened = len(conns)
	if firstErr != nil {
		res.Err = firstErr.Error()
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close(ctx)
		}
	}()
	if res.AtOnce, err = settledMemory(ctx, p.proc.PID()); err != nil {
		return res, err
	}
	if err := sleepCtx(ctx, idleHold); err != nil {
		return res, err
	}
	res.After, err = settledMemory(ctx, p.proc.PID())
	return res, err
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// clientsPerSource is how many idle clients connect from one source
// address: loopback connections from one address to one port run out of
// ephemeral ports (net.ipv4.ip_local_port_range, 28,232 by default) well
// before the counts the memory test may ask for.
const clientsPerSource = 10000

// sourceAddr is the local address of idle client i: 127.0.0.2, 127.0.0.3,
// ..., a new one every clientsPerSource clients (all of 127/8 is loopback).
func sourceAddr(i int) net.IP {
	k := 2 + i/clientsPerSource
	return net.IPv4(127, byte(k>>16), byte(k>>8), byte(k))
}

// openIdle opens up to n connections, client i from sourceAddr(i); it
// returns those that opened and the first error.
func openIdle(ctx context.Context, dsn string, n int) ([]*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse idle client dsn: %w", err)
	}
	var (
		mu       sync.Mutex
		conns    []*pgconn.PgConn
		firstErr error
		wg       sync.WaitGroup
	)
	jobs := make(chan int)
	for range idleConnectWorkers {
		wg.Go(func() {
			for i := range jobs {
				c, err := pgconn.ConnectConfig(ctx, withSource(cfg, sourceAddr(i)))
				mu.Lock()
				if err == nil {
					conns = append(conns, c)
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return conns, firstErr
}

// withSource is a copy of cfg that dials from local address ip.
// IP_BIND_ADDRESS_NO_PORT leaves the choice of the port to connect(),
// which may reuse a port that another connection (or one in TIME_WAIT
// from an earlier count) holds towards a different destination.
func withSource(cfg *pgconn.Config, ip net.IP) *pgconn.Config {
	c := cfg.Copy()
	d := net.Dialer{
		LocalAddr: &net.TCPAddr{IP: ip},
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = bindAddressNoPort(int(fd))
			})
			return errors.Join(err, serr)
		},
	}
	c.DialFunc = d.DialContext
	return c
}

// settledMemory polls the memory until two readings in a row agree on RSS
// (the pooler has finished reacting to the logins) or settleTimeout passes.
func settledMemory(ctx context.Context, pid int) (Memory, error) {
	deadline := time.Now().Add(settleTimeout)
	prev, err := readMemory(pid)
	for err == nil && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return prev, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		var cur Memory
		if cur, err = readMemory(pid); err == nil && cur.RSS == prev.RSS {
			return cur, nil
		}
		prev = cur
	}
	return prev, err
}
