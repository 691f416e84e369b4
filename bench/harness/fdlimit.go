package harness

import (
	"fmt"
	"syscall"
)

// idleFDMargin is the descriptors the "max" idle count leaves free below
// the open-file limit: the pooler's listeners, log, pool connections and
// the client program's own files.
const idleFDMargin = 1000

// fileLimitCeiling bounds a hard limit reported as unlimited: the kernel
// refuses a soft RLIMIT_NOFILE above fs.nr_open (1,048,576 by default).
const fileLimitCeiling = 1 << 20

// issueIdleClients is the idle client count the issue asked for; the
// report says why it was not run when the limit is below it.
const issueIdleClients = 50000

// IdleLimit is what bounds the counts of the idle-client test. Every idle
// client is a descriptor in the pooler and one in the client program
// (this process), and both have the same RLIMIT_NOFILE: the poolers are
// our children and inherit it.
type IdleLimit struct {
	FileLimit int // hard RLIMIT_NOFILE of this process; the soft limit is raised to it
	Max       int // the "max" count: FileLimit - idleFDMargin, or Cap when lower
	Cap       int `json:",omitempty"` // BENCH_IDLE_MAX when it lowered Max
}

// newIdleLimit is the limit for a hard RLIMIT_NOFILE and a BENCH_IDLE_MAX
// (0: none).
func newIdleLimit(hard uint64, capCount int) IdleLimit {
	l := IdleLimit{FileLimit: int(min(hard, fileLimitCeiling))}
	l.Max = max(1, l.FileLimit-idleFDMargin)
	if capCount > 0 && capCount < l.Max {
		l.Max, l.Cap = capCount, capCount
	}
	return l
}

// resolve turns the requested counts (IdleMax for "max") into numbers; a
// count above Max is an error, found before anything starts.
func (l IdleLimit) resolve(counts []int) ([]int, error) {
	out := make([]int, len(counts))
	for i, n := range counts {
		switch {
		case n == IdleMax:
			out[i] = l.Max
		case n > l.FileLimit-idleFDMargin:
			return nil, fmt.Errorf("BENCH_IDLE_CLIENTS: %d idle clients need more than the open-file limit of %d allows (at most %d; use max)",
				n, l.FileLimit, l.FileLimit-idleFDMargin)
		default:
			out[i] = n
		}
	}
	return out, nil
}

// raiseFileLimitToHard lifts the soft RLIMIT_NOFILE to the hard limit
// (children inherit it) and returns the hard limit.
func raiseFileLimitToHard() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("get open file limit: %w", err)
	}
	hard := uint64(min(lim.Max, fileLimitCeiling))
	return hard, raiseFileLimit(int(hard))
}
