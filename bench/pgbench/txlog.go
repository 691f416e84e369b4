package pgbench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TxLog is what ReadLatencies found in one -l log file.
type TxLog struct {
	Latencies []int64 // µs of every completed transaction, in file order
	Failed    int     // lines whose time is "failed", "serialization" or "deadlock"
	Skipped   int     // lines whose time is "skipped" (only with --rate)
}

// ReadLatencies appends the transaction times of one pgbench -l file to
// log. A line is "client_id transaction_no time script_no time_epoch
// time_us [schedule_lag retries]"; time is in microseconds or a word for a
// transaction that did not complete.
func ReadLatencies(r io.Reader, log *TxLog) error {
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
