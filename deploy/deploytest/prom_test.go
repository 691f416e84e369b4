//go:build linux

package deploytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// prometheus is a real Prometheus server started for one test.
type prometheus struct {
	base string // http://127.0.0.1:port
	log  string // its stderr
}

// startPrometheus runs prometheus scraping target (host:port) as job
// pg_doorman every second, with rules loaded, and stops it when the test
// ends.
func startPrometheus(t *testing.T, target, rules string) *prometheus {
	t.Helper()
	bin := tool(t, "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pg_doorman
    static_configs:
      - targets: [%q]
rule_files:
  - %q
`, target, rules)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := apptest.FreePort(t)
	p := &prometheus{base: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(dir, "prometheus.log")}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			out, _ := os.ReadFile(p.log)
			t.Logf("prometheus log:\n%s", out)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(p.base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(p.log)
			t.Fatalf("prometheus exited: %v\n%s", err, out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 20s")
		}
	}
}

// apiResponse is the envelope of the Prometheus HTTP API.
type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// get calls an API path and decodes the envelope; a status other than
// success is an error carrying Prometheus's message.
func (p *prometheus) get(ctx context.Context, path string, q url.Values) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decode %s (HTTP %d): %w: %.200s", path, resp.StatusCode, err, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: status %s: %s: %s", path, r.Status, r.ErrorType, r.Error)
	}
	return r.Data, nil
}

// query runs an instant query and returns how many series or samples it
// gave (a scalar or string counts as one).
func (p *prometheus) query(ctx context.Context, expr string) (int, error) {
	data, err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return 0, err
	}
	var d queryData
	if err := json.Unmarshal(data, &d); err != nil {
		return 0, fmt.Errorf("decode result of %q: %w", expr, err)
	}
	switch d.ResultType {
	case "vector", "matrix":
		var series []json.RawMessage
		if err := json.Unmarshal(d.Result, &series); err != nil {
			return 0, fmt.Errorf("decode %s of %q: %w", d.ResultType, expr, err)
		}
		return len(series), nil
	default: // scalar, string
		return 1, nil
	}
}

// waitFor polls expr until it returns data, at most timeout.
func (p *prometheus) waitFor(t *testing.T, expr string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		n, err := p.query(ctx, expr)
		if err == nil && n > 0 {
			return
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus: %s returned nothing within %s (last error: %v)", expr, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ruleHealth returns, per rule name, the health Prometheus reports after
// evaluating it and the last evaluation error.
func (p *prometheus) ruleHealth(ctx context.Context) (map[string]string, error) {
	data, err := p.get(ctx, "/api/v1/rules", nil)
	if err != nil {
		return nil, err
	}
	var d struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decode rules: %w", err)
	}
	out := map[string]string{}
	for _, g := range d.Groups {
		for _, r := range g.Rules {
			out[r.Name] = r.Health + " " + r.LastError
		}
	}
	if len(out) == 0 {
		return nil, errors.New("prometheus loaded no rules")
	}
	return out, nil
}
