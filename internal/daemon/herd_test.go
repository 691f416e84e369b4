package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
)

// handshake is one backend start seen in PostgreSQL's log: from
// "connection received" to "connection authorized".
type handshake struct {
	pid        string
	start, end time.Time
	user       string
}

var logLineRE = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \w+ \[(\d+)\] .*?(connection received|connection authorized: user=(\S+))`)

// handshakes parses a PostgreSQL log written with log_connections and the
// harness's millisecond log_line_prefix.
func handshakes(t *testing.T, log string) []handshake {
	t.Helper()
	byPID := map[string]*handshake{}
	var out []*handshake
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := logLineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ts, err := time.Parse("2006-01-02 15:04:05.000", m[1])
		require.NoError(t, err)
		if m[3] == "connection received" {
			h := &handshake{pid: m[2], start: ts}
			byPID[m[2]] = h
			out = append(out, h)
			continue
		}
		if h := byPID[m[2]]; h != nil {
			h.end, h.user = ts, m[4]
		}
	}
	res := make([]handshake, 0, len(out))
	for _, h := range out {
		if !h.end.IsZero() {
			res = append(res, *h)
		}
	}
	return res
}

// maxInFlight is the largest number of handshakes of user in progress at
// one moment (millisecond resolution: a start and an end in the same
// millisecond count as overlapping, erring on the side of failing).
func maxInFlight(hs []handshake, user string) int {
	type ev struct {
		at    time.Time
		delta int
	}
	var evs []ev
	for _, h := range hs {
		if h.user == user {
			evs = append(evs, ev{h.start, +1}, ev{h.end.Add(time.Millisecond), -1})
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at.Equal(evs[j].at) {
			return evs[i].delta < evs[j].delta
		}
		return evs[i].at.Before(evs[j].at)
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak
}

func TestHandshakeParsing(t *testing.T) {
	log := `2026-11-29 17:00:00.100 UTC [11] LOG:  connection received: host=127.0.0.1 port=1
2026-11-29 17:00:00.101 UTC [12] LOG:  connection received: host=127.0.0.1 port=2
2026-11-29 17:00:00.105 UTC [11] herd@db LOG:  connection authorized: user=herd database=db
2026-11-29 17:00:00.110 UTC [13] LOG:  connection received: host=127.0.0.1 port=3
2026-11-29 17:00:00.120 UTC [12] herd@db LOG:  connection authorized: user=herd database=db
2026-11-29 17:00:00.130 UTC [13] other@db LOG:  connection authorized: user=other database=db
`
	hs := handshakes(t, log)
	require.Len(t, hs, 3)
	require.Equal(t, 2, maxInFlight(hs, "herd"))
	require.Equal(t, 1, maxInFlight(hs, "other"))
}

// TestThunderingHerd: 200 clients arrive at once on a pool of 40 that holds
// 4 idle connections. PostgreSQL's own log shows at most
// scaling_max_parallel_creates (2) handshakes of that pool in flight at any
// moment, and every client succeeds.
func TestThunderingHerd(t *testing.T) {
	setup(t)
	verifierHerd := user(t, "herd", "herd-secret")
	pg.ExecDB(t, "benchdb", "GRANT ALL ON SCHEMA public TO herd")
	d := apptest.Start(t, fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
  query_wait_timeout: 60s
  retain_connections_time: 100ms
pools:
  herd:
    server_host: 127.0.0.1
    server_port: %d
    server_database: benchdb
    users:
      - username: herd
        password: '%s'
        pool_size: 40
        min_pool_size: 4
`, pg.Port, verifierHerd))
	ctx := context.Background()
	// One SCRAM login gives the pool the key it needs for passthrough;
	// then the retain task warms it to min_pool_size.
	first, err := pgx.Connect(ctx, d.DSN("herd", "herd-secret", "herd")+" default_query_exec_mode=exec")
	require.NoError(t, err)
	p, ok := d.Daemon.Pools.Lookup("herd", "herd")
	require.True(t, ok)
	require.Eventually(t, func() bool { return p.Conns().Stats().Idle >= 4 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, 4, p.Conns().Stats().Total)

	const clients = 200
	conns := make([]*pgx.Conn, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range conns {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := pgx.Connect(ctx, d.DSN("herd", "herd-secret", "herd")+" default_query_exec_mode=exec")
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	logBefore := len(pg.ReadLog(t))
	start := make(chan struct{})
	results := make(chan error, clients)
	for _, c := range conns {
		go func(c *pgx.Conn) {
			<-start
			_, err := c.Exec(ctx, "SELECT pg_sleep(0.02)")
			results <- err
		}(c)
	}
	close(start)
	for i := 0; i < clients; i++ {
		require.NoError(t, <-results)
	}
	for _, c := range conns {
		c.Close(ctx)
	}
	first.Close(ctx)

	hs := handshakes(t, pg.ReadLog(t)[logBefore:])
	peak := maxInFlight(hs, "herd")
	n := 0
	for _, h := range hs {
		if h.user == "herd" {
			n++
		}
	}
	t.Logf("herd: %d new backends during the burst, at most %d handshakes in flight; pool scaling %+v", n, peak, p.Conns().Stats().Counters)
	require.Greater(t, n, 0, "the burst did open new backends (the test measures something)")
	require.LessOrEqual(t, peak, 2, "scaling_max_parallel_creates bounds concurrent handshakes")
	require.LessOrEqual(t, p.Conns().Stats().Total, 40)
}
