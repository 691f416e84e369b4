package rolecheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// endpoint is one health path and the role it admits.
type endpoint struct {
	path string
	role Role // RoleAny admits primary and replica
	lag  bool // ?lag= and the default MaxLag apply (to replicas)
}

// endpoints follow Patroni's REST API names
// (https://patroni.readthedocs.io/en/latest/rest_api.html).
var endpoints = []endpoint{
	{path: "primary", role: RolePrimary},
	{path: "master", role: RolePrimary},
	{path: "leader", role: RolePrimary},
	{path: "read-write", role: RolePrimary},
	{path: "replica", role: RoleReplica, lag: true},
	{path: "standby", role: RoleReplica, lag: true},
	{path: "read-only", role: RoleAny, lag: true},
	{path: "health", role: RoleAny},
}

// statusBody is the JSON answer of a health endpoint.
type statusBody struct {
	State      string `json:"state"` // running or unreachable
	Role       Role   `json:"role,omitempty"`
	Server     string `json:"server"`
	LagBytes   *int64 `json:"replication_lag_bytes,omitempty"`
	Match      bool   `json:"match"`
	Reason     string `json:"reason"`
	CheckedAgo string `json:"checked_ago,omitempty"`
}

func (s *Sidecar) endpoint(ep endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, body := s.answer(r, ep)
		s.metrics.Requests.WithLabelValues(ep.path, strconv.Itoa(code)).Inc()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if r.Method != http.MethodHead {
			_ = json.NewEncoder(w).Encode(body)
		}
	})
}

// answer computes the status code and body of one request: 200 when the
// server fits the endpoint, 503 when it does not or cannot be reached, 400
// for a bad ?lag=.
func (s *Sidecar) answer(r *http.Request, ep endpoint) (int, statusBody) {
	maxLag := int64(0)
	if ep.lag {
		maxLag = s.cfg.Options.MaxLag
		if q := r.URL.Query().Get("lag"); q != "" {
			n, err := ParseSize(q)
			if err != nil {
				return http.StatusBadRequest, statusBody{State: "bad request", Reason: fmt.Sprintf("lag: %v", err)}
			}
			maxLag = n
		}
	}
	st, err := s.State(r.Context())
	body := statusBody{Server: s.cfg.Options.Addr()}
	if err != nil {
		body.State, body.Reason = "unreachable", err.Error()
		return http.StatusServiceUnavailable, body
	}
	v := Evaluate(st, ep.role, maxLag)
	body.State, body.Role, body.Match, body.Reason = "running", st.Role(), v.Match, v.Reason
	if st.LagBytes >= 0 {
		body.LagBytes = &st.LagBytes
	}
	s.mu.Lock()
	body.CheckedAgo = s.cfg.Now().Sub(s.cached.at).Round(time.Millisecond).String()
	s.mu.Unlock()
	if !v.Match {
		return http.StatusServiceUnavailable, body
	}
	return http.StatusOK, body
}
