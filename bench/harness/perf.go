package harness

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Symbol is one line of perf report --no-children --sort sym -n: the
// samples whose instruction pointer was in the symbol (self time).
type Symbol struct {
	Name    string
	Kernel  bool // perf's [k]; [.] and the rest count as user space
	Samples int64
}

// PerfProfile is what perf report gave: the sample totals and the symbols
// with the most samples, most first.
type PerfProfile struct {
	Samples       int64
	KernelSamples int64
	Top           []Symbol
}

// KernelShare is the fraction of samples in the kernel (0 without samples).
func (p PerfProfile) KernelShare() float64 {
	if p.Samples == 0 {
		return 0
	}
	return float64(p.KernelSamples) / float64(p.Samples)
}

// perfLine is "    23.07%           233  [k] do_syscall_64".
var perfLine = regexp.MustCompile(`^\s*([0-9.]+)%\s+([0-9]+)\s+\[(.)\]\s+(.+?)\s*$`)

// parsePerfReport reads perf report --stdio -n --no-children --sort sym
// -g none, keeping the top symbols (perf lists them most first) and
// summing every line into the totals; comment lines (#) are skipped.
func parsePerfReport(r io.Reader, top int) (PerfProfile, error) {
	var p PerfProfile
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		m := perfLine.FindStringSubmatch(line)
		if m == nil {
			return p, fmt.Errorf("perf report line %q: want <percent>%% <samples> [<mode>] <symbol>", line)
		}
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return p, fmt.Errorf("perf report line %q: samples: %w", line, err)
		}
		s := Symbol{Name: m[4], Kernel: m[3] == "k", Samples: n}
		p.Samples += n
		if s.Kernel {
			p.KernelSamples += n
		}
		if len(p.Top) < top {
			p.Top = append(p.Top, s)
		}
	}
	if err := sc.Err(); err != nil {
		return p, fmt.Errorf("read perf report: %w", err)
	}
	return p, nil
}
