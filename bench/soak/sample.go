package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/doorman-go/doorman/bench/harness"
)

// The exporter series the soak follows.
const (
	metricGoroutines = "go_goroutines"
	metricHeapInuse  = "go_memstats_heap_inuse_bytes"
	metricCancels    = `pg_doorman_connections_total{type="cancel"}`
)

// Sample is pg_doorman's state at one moment and the work done since the
// previous sample.
type Sample struct {
	At         time.Duration // since the load started
	RSS        int64         // VmRSS, bytes
	HWM        int64         // VmHWM, bytes
	Heap       int64         // go_memstats_heap_inuse_bytes
	Goroutines int64         // go_goroutines
	FDs        int           // open file descriptors
	Cancels    int64         // CancelRequests pg_doorman received since start
	Stopped    bool          // taken after the workers stopped; not judged
	Done       Totals        // outcomes in the interval that ends at At
}

// probe reads pg_doorman's process facts.
type probe struct {
	pid        int
	metricsURL string
	client     *http.Client
}

// sample reads everything but Done.
func (p *probe) sample(ctx context.Context, at time.Duration) (Sample, error) {
	s := Sample{At: at}
	mem, err := harness.ReadMemory(p.pid)
	if err != nil {
		return s, err
	}
	s.RSS, s.HWM = mem.RSS, mem.Peak
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid))
	if err != nil {
		return s, fmt.Errorf("count descriptors: %w", err)
	}
	s.FDs = len(fds)
	m, err := p.scrape(ctx)
	if err != nil {
		return s, err
	}
	s.Goroutines, s.Heap, s.Cancels = int64(m[metricGoroutines]), int64(m[metricHeapInuse]), int64(m[metricCancels])
	return s, nil
}

// settleTimeout bounds waiting for pg_doorman to let stopped clients go.
const settleTimeout = 10 * time.Second

// settled samples until two samples a second apart agree on goroutines
// and descriptors, or settleTimeout passes; At is measured from start.
func (p *probe) settled(start time.Time) (Sample, error) {
	ctx := context.Background()
	deadline := time.Now().Add(settleTimeout)
	prev, err := p.sample(ctx, time.Since(start))
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(time.Second) // polling interval: nothing to wait on but the next reading
		var cur Sample
		if cur, err = p.sample(ctx, time.Since(start)); err == nil && cur.Goroutines == prev.Goroutines && cur.FDs == prev.FDs {
			return cur, nil
		}
		prev = cur
	}
	return prev, err
}

func (p *probe) scrape(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metricsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", p.metricsURL, err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", p.metricsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", p.metricsURL, resp.Status)
	}
	return parseMetrics(io.LimitReader(resp.Body, 16<<20), metricGoroutines, metricHeapInuse, metricCancels)
}

// parseMetrics reads the samples of series from the Prometheus text
// format; a series is a name with its labels as exposed
// (name{label="value"}); every series must be present.
func parseMetrics(r io.Reader, names ...string) (map[string]float64, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || !want[fields[0]] {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		out[fields[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("metrics have no %s", n)
		}
	}
	return out, nil
}
