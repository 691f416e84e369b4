package patroni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// MemberStatus is the part of a member's own GET /patroni answer that says
// what its postgres really is. Patroni derives Role from pg_is_in_recovery()
// on every request ("replica" while in recovery, "master" or, from 3.x on,
// "primary" after promotion), whereas /cluster names a member leader as soon
// as it holds the leader key, which in a switchover comes before promotion.
type MemberStatus struct {
	Role     string // "master", "primary", "replica", "standby_leader", ...
	State    State
	Timeline int // 0 when absent
	// ClusterUnlocked is true when the member saw no leader key.
	ClusterUnlocked bool
}

// Primary reports whether postgres on the member runs out of recovery.
func (s MemberStatus) Primary() bool {
	return (s.Role == "master" || s.Role == "primary") && s.State == StateRunning
}

type memberStatusJSON struct {
	Role            string          `json:"role"`
	State           string          `json:"state"`
	Timeline        json.RawMessage `json:"timeline"`
	ClusterUnlocked bool            `json:"cluster_unlocked"`
}

// ParseMemberStatus decodes a /patroni body.
func ParseMemberStatus(body []byte) (MemberStatus, error) {
	var j memberStatusJSON
	if err := json.Unmarshal(body, &j); err != nil {
		return MemberStatus{}, fmt.Errorf("parse patroni member status: %w", err)
	}
	if j.Role == "" {
		return MemberStatus{}, fmt.Errorf("parse patroni member status: no role")
	}
	s := MemberStatus{Role: j.Role, State: State(j.State), ClusterUnlocked: j.ClusterUnlocked}
	tl, err := jsonInt(j.Timeline, false)
	if err != nil {
		return MemberStatus{}, fmt.Errorf("parse patroni member status: timeline: %w", err)
	}
	s.Timeline = tl
	return s, nil
}

// FetchMemberStatus sends GET <api>/patroni to one member; api is the
// member's api_url from /cluster (with or without the /patroni suffix). Any
// HTTP status other than 200 is an error (Patroni answers /patroni with 200
// whenever it runs). The request is bounded by the client's Timeout and
// reported to the observer under the member's base URL.
func (c *Client) FetchMemberStatus(ctx context.Context, api string) (MemberStatus, error) {
	base, err := NormalizeURL(api)
	if err != nil {
		return MemberStatus{}, fmt.Errorf("fetch member status: %w", err)
	}
	st, err := fetchParsed(c, ctx, base, "/patroni", ParseMemberStatus)
	if err != nil {
		return MemberStatus{}, fmt.Errorf("fetch member status: %w", err)
	}
	return st, nil
}

// FetchLeaderStatus sends GET <api>/primary to one member and decodes the
// body, the same document as /patroni. Patroni answers 200 only while that
// member itself holds the leader lock (its own view, not /cluster's), else
// 503, which is an error here. Unlike /patroni, Patroni serves it without
// retrying its status query: while postgres is down /patroni sleeps about
// a second before it answers, /primary answers at once (patroni/api.py
// do_GET and do_GET_patroni). While postgres answers that query out of
// recovery the body has role "master" (3.0.x) or "primary" and a timeline;
// when the query fails it has only Patroni's configured role and state, no
// timeline.
func (c *Client) FetchLeaderStatus(ctx context.Context, api string) (MemberStatus, error) {
	base, err := NormalizeURL(api)
	if err != nil {
		return MemberStatus{}, fmt.Errorf("fetch leader status: %w", err)
	}
	st, err := fetchParsed(c, ctx, base, "/primary", ParseMemberStatus)
	if err != nil {
		return MemberStatus{}, fmt.Errorf("fetch leader status: %w", err)
	}
	return st, nil
}

// HoldsLeaderLock asks one member, GET <api>/primary, whether it holds the
// leader lock in its own view: true on 200, false on 503, an error on
// anything else (no answer, another status). Patroni answers 200 whether or
// not postgres runs (sandbox pitfall 1): a leader whose postgres crashed or
// restarts in place still holds the lock, a demoted one has released it.
// The body is not read. Build the client with Retries < 0 for this: a 503
// is an answer here, not a failure to retry.
func (c *Client) HoldsLeaderLock(ctx context.Context, api string) (bool, error) {
	base, err := NormalizeURL(api)
	if err != nil {
		return false, fmt.Errorf("leader lock check: %w", err)
	}
	_, err = fetchParsed(c, ctx, base, "/primary", func([]byte) (struct{}, error) { return struct{}{}, nil })
	var se *StatusError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &se) && se.Code == http.StatusServiceUnavailable:
		return false, nil
	}
	return false, fmt.Errorf("leader lock check: %w", err)
}
