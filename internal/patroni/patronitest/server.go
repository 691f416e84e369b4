package patronitest

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doorman-go/doorman/internal/patroni"
)

// Server is a fake Patroni REST API. GET /cluster answers with the current
// body; every other path answers 404. The zero value is not usable: call
// NewServer or NewTLSServer.
type Server struct {
	srv      *httptest.Server
	requests atomic.Int64
	closed   chan struct{}
	once     sync.Once

	mu     sync.Mutex
	body   []byte
	status int
	delay  time.Duration
	hook   func(n int64, r *http.Request)
}

// NewServer starts a plain-HTTP fake on 127.0.0.1 answering body to /cluster.
func NewServer(tb testing.TB, body []byte) *Server {
	tb.Helper()
	return start(tb, body, nil)
}

// NewTLSServer starts an HTTPS fake; cfg must carry the server certificate
// (and ClientAuth/ClientCAs to demand a client certificate).
func NewTLSServer(tb testing.TB, body []byte, cfg *tls.Config) *Server {
	tb.Helper()
	return start(tb, body, cfg)
}

func start(tb testing.TB, body []byte, cfg *tls.Config) *Server {
	s := &Server{body: body, status: http.StatusOK, closed: make(chan struct{})}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS tests provoke handshake errors on purpose
	if cfg != nil {
		s.srv.TLS = cfg
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	tb.Cleanup(s.Close)
	return s
}

// URL is the base URL ("http://127.0.0.1:port"); it stays valid after Close,
// when connections to it are refused.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server; pending delayed or hooked requests are released.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closed)
		s.srv.Close()
	})
}

// Requests returns the number of requests received so far (any path).
func (s *Server) Requests() int64 { return s.requests.Load() }

// SetBody replaces the /cluster body.
func (s *Server) SetBody(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
}

// SetCluster replaces the /cluster body with c encoded as Patroni does.
func (s *Server) SetCluster(tb testing.TB, c *patroni.Cluster) {
	tb.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		tb.Fatalf("encode cluster: %v", err)
	}
	s.SetBody(b)
}

// SetStatus makes /cluster answer code (200 restores normal answers).
func (s *Server) SetStatus(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = code
}

// SetDelay makes every request wait d before answering (or until the client
// gives up or the server closes).
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// SetHook installs f, called for request number n (from 1) after the body
// and status to answer with have been taken and before the delay; f may
// block (e.g. on a channel) to hold that request. nil removes the hook.
func (s *Server) SetHook(f func(n int64, r *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = f
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	s.mu.Lock()
	body, status, delay, hook := s.body, s.status, s.delay, s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(n, r)
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		}
	}
	if r.URL.Path != "/cluster" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
