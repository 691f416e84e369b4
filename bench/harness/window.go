package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/doorman-go/doorman/bench/pgbench"
)

// A measurement window is the part of a pgbench run between the moment
// every client is connected and shortly before pgbench's -T is up: the
// pooler's CPU and context switches are read at its two ends and divided by
// the transactions that ended inside it, so the logins of hundreds of
// clients, which cost more than a few transactions per second, do not count.
//
// When the clients are connected is read from pgbench's own process: each
// connection is a socket descriptor in /proc/<pgbench>/fd, pgbench opens
// its clients' connections before the first transaction and keeps them to
// the end (not with -C), and opens them one after the other in each thread,
// synchronously (PQconnectdb), so once it holds as many sockets as clients
// at most one login per thread is still going on; pausedSettle later those
// have finished. This does not depend on the target (a probe's connection
// time does: logins are slower while the previous run's backends exit) and
// needs no query to the server. pgbench's own "initial connection time"
// is checked against the window's start afterwards (finishWindow).
const (
	// pausedSettle is the wait between pgbench holding every client's
	// socket and the window's start.
	pausedSettle = time.Second
	// pausedTail is how long before pgbench's -T is up the window ends at
	// the latest, so that no client is stopping inside it.
	pausedTail = 2 * time.Second
	// pausedMinWindow is the shortest window a paused run must have.
	pausedMinWindow = 12 * time.Second
)

// pausedWindow is the length of a paused run's window: BENCH_TIME, but at
// least pausedMinWindow.
func pausedWindow(s Settings) time.Duration { return max(s.Duration, pausedMinWindow) }

// pausedRunTime is the part of a paused run's -T after connecting: the
// settle wait, the window and the tail.
func pausedRunTime(s Settings) time.Duration { return pausedSettle + pausedWindow(s) + pausedTail }

// WindowResult is what one paused run measured inside its window.
type WindowResult struct {
	From, To    time.Time     // the window: when the pooler's counters were read
	UserCPU     time.Duration `json:",omitempty"` // the pooler's utime in the window; 0 for direct
	SystemCPU   time.Duration `json:",omitempty"` // the pooler's stime in the window
	CtxSwitches int64         `json:",omitempty"` // the pooler's voluntary + involuntary context switches in the window
	TxLog       pgbench.TxLog // the transactions that ended inside the window
}

// TPS is the transactions that ended in the window per second of it.
func (w WindowResult) TPS() float64 {
	if !w.To.After(w.From) {
		return 0
	}
	return float64(len(w.TxLog.Latencies)) / w.To.Sub(w.From).Seconds()
}

// windowRun is what measureWindow saw while pgbench ran.
type windowRun struct {
	WindowResult
	launch time.Time // when pgbench was started
	failed string    // why there is no window; "" when there is one
}

// poolerCounters are the pooler's cumulative CPU times and context
// switches at one moment.
type poolerCounters struct {
	at          time.Time
	user, sys   time.Duration
	ctxSwitches int64
}

// readPoolerCounters reads the counters of process pid; pid 0 (no pooler)
// gives only the time.
func readPoolerCounters(pid int) (poolerCounters, error) {
	c := poolerCounters{at: time.Now()}
	if pid == 0 {
		return c, nil
	}
	var err error
	if c.user, c.sys, err = readCPUSplit(pid); err != nil {
		return c, err
	}
	if c.ctxSwitches, err = readCtxSwitches(pid); err != nil {
		return c, err
	}
	return c, nil
}

// measureWindow waits until pgbench (process pgbenchPID, started at
// launch) has connected spec.clients clients, then reads the pooler's
// counters at the start and the end of a window of spec.window, shortened
// to end pausedTail before pgbench's -T is up. exited is closed when
// pgbench has exited. A window that cannot be had (pgbench exited, or
// connected too late to leave half a window) is reported in failed; the
// error is for the harness's own failures.
func measureWindow(ctx context.Context, spec runSpec, pgbenchPID int, launch time.Time, exited <-chan struct{}) (windowRun, error) {
	win := windowRun{launch: launch}
	last := launch.Add(spec.dur - pausedTail) // the latest end of the window
	connected, failed, err := waitConnected(ctx, pgbenchPID, spec.clients, last.Add(-spec.window/2-pausedSettle), exited)
	if err != nil || failed != "" {
		win.failed = failed
		return win, err
	}
	start := connected.Add(pausedSettle)
	if win.failed, err = sleepUntil(ctx, start, exited); err != nil || win.failed != "" {
		return win, err
	}
	before, err := readPoolerCounters(spec.poolerPID)
	if err != nil {
		return win, err
	}
	end := before.at.Add(spec.window)
	if end.After(last) {
		end = last // the clients connected late: a shorter window, at least half of one
	}
	if win.failed, err = sleepUntil(ctx, end, exited); err != nil || win.failed != "" {
		return win, err
	}
	after, err := readPoolerCounters(spec.poolerPID)
	if err != nil {
		return win, err
	}
	win.From, win.To = before.at, after.at
	win.UserCPU, win.SystemCPU = after.user-before.user, after.sys-before.sys
	win.CtxSwitches = after.ctxSwitches - before.ctxSwitches
	return win, nil
}

// waitConnected polls pgbench's sockets until there are clients of them
// and returns when that was first seen; failed says why not when pgbench
// exits or deadline passes first.
func waitConnected(ctx context.Context, pid, clients int, deadline time.Time, exited <-chan struct{}) (at time.Time, failed string, err error) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		n, err := countSockets(pid)
		switch {
		case err != nil:
			return at, fmt.Sprintf("count pgbench's connections: %v", err), nil // it has most likely exited
		case n >= clients:
			return time.Now(), "", nil
		case time.Now().After(deadline):
			return at, fmt.Sprintf("pgbench had %d of %d clients connected when less than half a window of its -T was left", n, clients), nil
		}
		select {
		case <-ctx.Done():
			return at, "", fmt.Errorf("benchmark stopped: %w", ctx.Err())
		case <-exited:
			return at, fmt.Sprintf("pgbench exited with %d of %d clients connected", n, clients), nil
		case <-tick.C:
		}
	}
}

// sleepUntil waits until t; failed is set when pgbench exits first.
func sleepUntil(ctx context.Context, t time.Time, exited <-chan struct{}) (failed string, err error) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return "", fmt.Errorf("benchmark stopped: %w", ctx.Err())
	case <-exited:
		return "pgbench exited before the window ended", nil
	case <-timer.C:
		return "", nil
	}
}

// countSockets counts the socket descriptors of process pid.
func countSockets(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list descriptors: %w", err)
	}
	n := 0
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.HasPrefix(link, "socket:") {
			n++
		}
	}
	return n, nil
}

// finishWindow stores win in res once pgbench has exited: it reads the
// transactions that ended inside the window from the -l files in dir and
// checks the window against what pgbench reported. A window that failed
// makes the run a failed one (res.Err) unless it has failed already.
func finishWindow(res *runResult, win windowRun, dir string) error {
	if res.Err != "" {
		return nil
	}
	if win.failed == "" {
		if err := readTxLogs(dir, pgbench.Window{From: win.From, To: win.To}, &win.TxLog); err != nil {
			return err
		}
		win.failed = checkWindow(win, res.Summary)
	}
	if win.failed != "" {
		res.Err = "measurement window: " + win.failed
		return nil
	}
	res.Window = &win.WindowResult
	return nil
}

// checkWindow says what is wrong with a measured window, "" when nothing.
func checkWindow(win windowRun, s pgbench.Summary) string {
	conn := time.Duration(s.ConnTimeMS * float64(time.Millisecond))
	if done := win.launch.Add(conn); done.After(win.From) {
		return fmt.Sprintf("pgbench reports %s to connect its clients, which ends %s after the window started",
			conn.Round(time.Millisecond), done.Sub(win.From).Round(time.Millisecond))
	}
	if len(win.TxLog.Latencies) == 0 {
		return fmt.Sprintf("no transaction in the -l logs ended between %s and %s",
			win.From.Format(time.StampMicro), win.To.Format(time.StampMicro))
	}
	return ""
}
