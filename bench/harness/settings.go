package harness

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Settings are the knobs of one benchmark run.
type Settings struct {
	Duration          time.Duration // BENCH_TIME: seconds per pgbench run
	Rounds            int           // BENCH_ROUNDS: repetitions of every case; TPS is the median
	Scale             int           // BENCH_SCALE: pgbench -s
	Clients           []int         // BENCH_CLIENTS: comma-separated client counts
	Jobs              int           // BENCH_JOBS: pgbench -j (capped by the client count)
	PoolSize          int           // BENCH_POOL_SIZE: server connections per pooler pool
	PreparedClients   int           // BENCH_PREPARED_CLIENTS: clients of the -M prepared run
	PreparedPoolSize  int           // BENCH_PREPARED_POOL_SIZE: pool of the -M prepared run
	IdleCounts        []int         // BENCH_IDLE_CLIENTS: idle client counts of the memory test; IdleMax in it: as many as the fd limit allows
	IdleMaxCap        int           // BENCH_IDLE_MAX: caps the "max" count (0: the fd limit alone)
	ProfileTxs        int           // BENCH_PROFILE_TXS: pgbench -t (per client) of the strace and perf runs
	Keep              bool          // BENCH_KEEP=1: keep the work directory
	TLSClients        []int         // BENCH_TLS_CLIENTS: client counts of the TLS section
	TLSConnectClients int           // BENCH_TLS_CONNECT_CLIENTS: clients of the pgbench -C run over TLS
	Paused            []PausedLoad  // BENCH_PAUSED: "clients:rate,..." of the paused-clients section (pgbench -R)
	Only              string        // BENCH_ONLY: "" (everything), "tls", "idle", "floor" or "paused" (only that section)

	// DoormanEnv are the PG_DOORMAN_GENERAL_* variables in the
	// environment, which every pg_doorman of the run inherits (for
	// example PG_DOORMAN_GENERAL_TRANSACTION_LOOP=true); the report names
	// them.
	DoormanEnv []string

	DoormanBin   string // path of the pg_doorman binary
	PgBouncerBin string // path of the pgbouncer binary
	Out          string // report file
	RepoDir      string // for git commit and Go version of the binary
}

// PausedLoad is one case of the paused-clients section: Clients clients
// that together run Rate transactions per second (pgbench -R), so that each
// client waits Clients/Rate seconds on average between transactions.
type PausedLoad struct {
	Clients, Rate int
}

// DefaultSettings keep a full run under 20 minutes on 2 cores.
func DefaultSettings() Settings {
	return Settings{
		Duration: 7 * time.Second, Rounds: 2, Scale: 10, Clients: []int{10, 100, 400},
		Jobs: 2, PoolSize: 40, PreparedClients: 100, PreparedPoolSize: 10,
		IdleCounts: []int{2000, IdleMax}, ProfileTxs: 2000,
		TLSClients: []int{10, 100}, TLSConnectClients: 10,
		// a query per client every ~150 ms and every ~800 ms on average
		Paused:     []PausedLoad{{Clients: 200, Rate: 1300}, {Clients: 400, Rate: 500}},
		DoormanBin: "bin/pg_doorman", PgBouncerBin: "/usr/sbin/pgbouncer",
		Out: "docs/benchmarks.md", RepoDir: ".",
	}
}

// ApplyEnv overrides s with the BENCH_* variables that getenv returns
// non-empty, and validates the result; every bad variable is reported.
func (s Settings) ApplyEnv(getenv func(string) string) (Settings, error) {
	var errs []error
	positive := func(key string, dst *int) {
		v := getenv(key)
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", key, v))
			return
		}
		*dst = n
	}
	secs := int(s.Duration / time.Second)
	positive("BENCH_TIME", &secs)
	s.Duration = time.Duration(secs) * time.Second
	positive("BENCH_ROUNDS", &s.Rounds)
	positive("BENCH_SCALE", &s.Scale)
	positive("BENCH_JOBS", &s.Jobs)
	positive("BENCH_POOL_SIZE", &s.PoolSize)
	positive("BENCH_PREPARED_CLIENTS", &s.PreparedClients)
	positive("BENCH_PREPARED_POOL_SIZE", &s.PreparedPoolSize)
	positive("BENCH_IDLE_MAX", &s.IdleMaxCap)
	positive("BENCH_PROFILE_TXS", &s.ProfileTxs)
	if v := getenv("BENCH_IDLE_CLIENTS"); v != "" {
		counts, err := parseIdleCounts(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("BENCH_IDLE_CLIENTS=%q: %w", v, err))
		}
		s.IdleCounts = counts
	}
	positive("BENCH_TLS_CONNECT_CLIENTS", &s.TLSConnectClients)
	for key, dst := range map[string]*[]int{"BENCH_CLIENTS": &s.Clients, "BENCH_TLS_CLIENTS": &s.TLSClients} {
		if v := getenv(key); v != "" {
			clients, err := parseClients(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", key, v, err))
			}
			*dst = clients
		}
	}
	if v := getenv("BENCH_PAUSED"); v != "" {
		loads, err := parsePaused(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("BENCH_PAUSED=%q: %w", v, err))
		}
		s.Paused = loads
	}
	// "proxy" is scripts/bench.sh's knob for the patroni_proxy part, which
	// does not run benchrun at all.
	switch v := getenv("BENCH_ONLY"); v {
	case "", OnlyTLS, OnlyIdle, OnlyFloor, OnlyPaused:
		s.Only = v
	default:
		errs = append(errs, fmt.Errorf("BENCH_ONLY=%q: want tls, idle, floor or paused (benchrun) or proxy (scripts/bench.sh)", v))
	}
	s.Keep = getenv("BENCH_KEEP") == "1"
	s.DoormanEnv = doormanEnv(os.Environ())
	return s, errors.Join(errs...)
}

// parseClients parses "10,100,400".
func parseClients(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parsePaused parses "200:1300,400:500": clients:rate pairs.
func parsePaused(v string) ([]PausedLoad, error) {
	var out []PausedLoad
	for _, f := range strings.Split(v, ",") {
		clients, rate, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("%q: want clients:rate", f)
		}
		pair, err := parseClients(clients + "," + rate) // two positive integers
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, PausedLoad{Clients: pair[0], Rate: pair[1]})
	}
	return out, nil
}

// IdleMax in Settings.IdleCounts stands for the largest idle client count
// the open-file limit allows (see idleMax).
const IdleMax = 0

// parseIdleCounts parses "2000,max": positive counts and "max" (IdleMax).
func parseIdleCounts(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		if strings.TrimSpace(f) == "max" {
			out = append(out, IdleMax)
			continue
		}
		n, err := parseClients(f)
		if err != nil {
			return nil, fmt.Errorf("%w or max", err)
		}
		out = append(out, n...)
	}
	return out, nil
}

// OnlyTLS is the BENCH_ONLY value that runs only the TLS section.
const OnlyTLS = "tls"

// OnlyIdle is the BENCH_ONLY value that runs only the idle-client memory
// test and writes no report file: its results go to the progress output
// (and to the -json file), for trying a change to what an idle client
// costs without the whole run.
const OnlyIdle = "idle"

// OnlyFloor is the BENCH_ONLY value that runs only the floor section (the
// bare forwarders next to both poolers) and writes no report file: its
// table goes to the progress output.
const OnlyFloor = "floor"

// OnlyPaused is the BENCH_ONLY value that runs only the paused-clients
// section (pgbench -R) and writes no report file: its table goes to the
// progress output.
const OnlyPaused = "paused"

// MaxClients is the largest client count of any run.
func (s Settings) MaxClients() int {
	m := max(s.PreparedClients, s.TLSConnectClients)
	for _, c := range append(append([]int(nil), s.Clients...), s.TLSClients...) {
		m = max(m, c)
	}
	for _, p := range s.Paused {
		m = max(m, p.Clients)
	}
	return m
}

// doormanEnv picks the pg_doorman general overrides out of env.
func doormanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "PG_DOORMAN_GENERAL_") {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}
