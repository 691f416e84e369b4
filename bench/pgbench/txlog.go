package pgbench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// TxLog is what ReadLatencies found in one -l log file.
type TxLog struct {
	Latencies []int64 // µs of every completed transaction, in file order
	Failed    int     // lines whose time is "failed", "serialization" or "deadlock"
	Skipped   int     // lines whose time is "skipped" (only with --rate and --latency-limit)
}

// Window is a span of transaction end times: From inclusive, To exclusive.
// The zero Window holds every time.
type Window struct {
	From, To time.Time
}

// Holds says whether a transaction that ended at t is inside w.
func (w Window) Holds(t time.Time) bool {
	if w.From.IsZero() && w.To.IsZero() {
		return true
	}
	return !t.Before(w.From) && t.Before(w.To)
}

// ReadLatencies appends the transaction times of one pgbench -l file to
// log. A line is "client_id transaction_no time script_no time_epoch
// time_us [schedule_lag] [retries]"; time is in microseconds or a word for
// a transaction that did not complete. With --rate, time counts from the
// transaction's scheduled start, so it includes schedule_lag.
func ReadLatencies(r io.Reader, log *TxLog) error {
	return ReadLatenciesIn(r, Window{}, log)
}

// ReadLatenciesIn is ReadLatencies for the lines of the transactions that
// ended inside w: time_epoch and time_us are the Unix time (seconds and
// microseconds) at which the transaction completed or failed (pgbench 14
// and later log the wall clock there, not a monotonic one).
func ReadLatenciesIn(r io.Reader, w Window, log *TxLog) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), summaryMaxLine)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 6 {
			return fmt.Errorf("pgbench log line %d: %d fields, want at least 6", n, len(fields))
		}
		end, err := endTime(fields[4], fields[5])
		if err != nil {
			return fmt.Errorf("pgbench log line %d: %w", n, err)
		}
		if !w.Holds(end) {
			continue
		}
		switch fields[2] {
		case "failed", "serialization", "deadlock":
			log.Failed++
			continue
		case "skipped":
			log.Skipped++
			continue
		}
		us, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil || us < 0 {
			return fmt.Errorf("pgbench log line %d: time %q is not a count of microseconds", n, fields[2])
		}
		log.Latencies = append(log.Latencies, us)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read pgbench log: %w", err)
	}
	return nil
}

// endTime parses the time_epoch and time_us columns of a log line.
func endTime(epoch, micros string) (time.Time, error) {
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("time_epoch %q is not a count of seconds", epoch)
	}
	us, err := strconv.ParseInt(micros, 10, 64)
	if err != nil || us < 0 || us >= 1e6 {
		return time.Time{}, fmt.Errorf("time_us %q is not a count of microseconds below 1000000", micros)
	}
	return time.Unix(sec, us*1e3), nil
}
