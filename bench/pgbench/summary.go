package pgbench

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Summary is the end-of-run report pgbench prints on stdout.
type Summary struct {
	Clients      int
	Threads      int
	QueryMode    string  // simple, extended or prepared
	Processed    int64   // transactions actually processed
	Failed       int64   // failed transactions (pgbench 15 counts only retryable errors)
	LatencyAvgMS float64 // latency average, ms
	ConnTimeMS   float64 // initial connection time, ms
	TPS          float64 // without initial connection time
}

// summaryMaxLine bounds one line of pgbench output.
const summaryMaxLine = 64 << 10

// ParseSummary reads pgbench's stdout. Lines it does not know are skipped;
// an output without a "tps = " line is an error, because then pgbench did
// not get as far as measuring anything.
func ParseSummary(r io.Reader) (Summary, error) {
	var s Summary
	var sawTPS bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), summaryMaxLine)
	for sc.Scan() {
		key, value, ok := splitSummaryLine(sc.Text())
		if !ok {
			continue
		}
		if err := s.set(key, value); err != nil {
			return s, fmt.Errorf("parse pgbench summary line %q: %w", sc.Text(), err)
		}
		sawTPS = sawTPS || key == "tps"
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("read pgbench summary: %w", err)
	}
	if !sawTPS {
		return s, fmt.Errorf("pgbench summary has no tps line")
	}
	return s, nil
}

// splitSummaryLine splits "key = value" (latencies, tps) or "key: value".
func splitSummaryLine(line string) (key, value string, ok bool) {
	key, value, ok = strings.Cut(line, " = ")
	if !ok {
		key, value, ok = strings.Cut(line, ":")
	}
	return strings.TrimSpace(key), strings.TrimSpace(value), ok
}

// set stores one "key: value" or "key = value" line.
func (s *Summary) set(key, value string) error {
	var err error
	switch key {
	case "number of clients":
		s.Clients, err = strconv.Atoi(value)
	case "number of threads":
		s.Threads, err = strconv.Atoi(value)
	case "query mode":
		s.QueryMode = value
	case "number of transactions actually processed":
		s.Processed, err = leadingInt(value)
	case "number of failed transactions":
		s.Failed, err = leadingInt(value)
	case "latency average":
		s.LatencyAvgMS, err = leadingFloat(value)
	case "initial connection time":
		s.ConnTimeMS, err = leadingFloat(value)
	case "tps":
		s.TPS, err = leadingFloat(value)
	}
	return err
}

// leadingInt parses "123", "123/1000" (with -t) and "12 (0.1%)".
func leadingInt(v string) (int64, error) {
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(v)
	}
	return strconv.ParseInt(v[:end], 10, 64)
}

// leadingFloat parses "0.810 ms" and "1234.5 (without initial connection time)".
func leadingFloat(v string) (float64, error) {
	word, _, _ := strings.Cut(v, " ")
	return strconv.ParseFloat(word, 64)
}

// Stderr is what ParseStderr finds on pgbench's stderr.
type Stderr struct {
	AbortedClients int      // "client N ... aborted in command ..."
	RunAborted     bool     // "Run was aborted; the above results are incomplete."
	Errors         []string // distinct server error texts, first seen first
}

// maxErrors bounds Stderr.Errors: the same failure repeats per client.
const maxErrors = 5

var (
	abortedRE = regexp.MustCompile(`client \d+ (script \d+ )?aborted`)
	errorRE   = regexp.MustCompile(`(ERROR|FATAL):\s+(.*)$`)
)

// ParseStderr reads pgbench's stderr.
func ParseStderr(r io.Reader) (Stderr, error) {
	var s Stderr
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), summaryMaxLine)
	for sc.Scan() {
		line := sc.Text()
		if abortedRE.MatchString(line) {
			s.AbortedClients++
		}
		if strings.Contains(line, "Run was aborted") {
			s.RunAborted = true
		}
		m := errorRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		text := m[1] + ": " + m[2]
		if !seen[text] && len(s.Errors) < maxErrors {
			seen[text] = true
			s.Errors = append(s.Errors, text)
		}
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("read pgbench stderr: %w", err)
	}
	return s, nil
}
