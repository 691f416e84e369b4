package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the HTTP API:
//
//	GET /                 liveness: 200 "OK" while the process serves HTTP
//	GET /health           the same
//	GET /ready            200 when every cluster's topology is younger than
//	                      max_topology_age, else 503 naming the stale ones
//	GET /update_clusters  fetch every cluster's /cluster now; 200 "OK", or
//	                      502 with the errors (the last topology stays)
//	GET /status           JSON: ports, their backends and connection counts
//	GET /metrics          Prometheus
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "OK") }
	mux.HandleFunc("GET /{$}", ok)
	mux.HandleFunc("GET /health", ok)
	mux.HandleFunc("GET /ready", p.serveReady)
	mux.HandleFunc("GET /update_clusters", p.serveUpdate)
	mux.HandleFunc("POST /update_clusters", p.serveUpdate)
	mux.HandleFunc("GET /status", p.serveStatus)
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.registry, promhttp.HandlerOpts{}))
	return mux
}

func (p *Proxy) serveUpdate(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), p.env.settings.Load().connectTimeout+30*time.Second)
	defer cancel()
	if err := p.Refresh(ctx); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	_, _ = fmt.Fprintln(w, "OK")
}

func (p *Proxy) serveReady(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	var stale []string
	for name, c := range p.clusters {
		if fresh, age := c.fresh(); !fresh {
			stale = append(stale, fmt.Sprintf("%s (age %s)", name, age.Round(time.Millisecond)))
		}
	}
	p.mu.Unlock()
	if len(stale) > 0 {
		slices.Sort(stale)
		http.Error(w, fmt.Sprintf("stale topology: %v", stale), http.StatusServiceUnavailable)
		return
	}
	_, _ = fmt.Fprintln(w, "OK")
}

type portStatus struct {
	Cluster  string        `json:"cluster"`
	Port     string        `json:"port"`
	Listen   string        `json:"listen"`
	Roles    []string      `json:"roles"`
	Refuse   string        `json:"refuse,omitempty"`
	Backends []BackendStat `json:"backends"`
}

func (p *Proxy) serveStatus(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	out := make([]portStatus, 0, len(p.ports))
	for k, pt := range p.ports {
		spec := pt.getSpec()
		st := portStatus{Cluster: k.cluster, Port: k.name, Listen: pt.Addr().String(), Backends: pt.state.stats()}
		for _, r := range spec.Roles {
			st.Roles = append(st.Roles, string(r))
		}
		st.Refuse = string(pt.state.refusal(p.env.clock.Now(), p.env.maxAge()))
		out = append(out, st)
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
