package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/doorman-go/doorman/internal/auth/hba"
	"github.com/doorman-go/doorman/internal/logging"
)

var (
	tlsModes       = []string{"allow", "disable", "require", "verify-full"}
	serverTLSModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}
	poolModes      = []string{"transaction", "session"}
	// adminDatabases are the virtual admin consoles; a pool with one of
	// these names could never be reached.
	adminDatabases = []string{"pgdoorman", "pgbouncer"}
)

// maxUnixSocketPath is sizeof(sockaddr_un.sun_path) - 1 on Linux.
const maxUnixSocketPath = 107

// Validate checks a Config built in code (Load already validates). It
// returns warnings and every problem joined, as Load does.
func (c *Config) Validate() ([]string, error) {
	d := &decoder{}
	w := d.validate(c)
	return w, errors.Join(d.errs...)
}

// validate appends every problem of cfg to d.errs and returns warnings.
func (d *decoder) validate(cfg *Config) []string {
	var w []string
	d.validateGeneral(&cfg.General, &w)
	d.portRange("prometheus.port", cfg.Prometheus.Port)
	if len(cfg.Pools) == 0 {
		w = append(w, "pools: no pools configured, only the admin console is reachable")
	}
	for _, name := range sortedPoolNames(cfg.Pools) {
		d.validatePool(cfg.Pools[name], &cfg.General, &w)
	}
	if !d.lenient {
		d.refuseUnimplemented(cfg)
	}
	return append(w, runtimeKnobWarnings(&cfg.General)...)
}

func (d *decoder) validateGeneral(g *General, w *[]string) {
	d.portRange("general.port", g.Port)
	d.atLeast("general.backlog", g.Backlog, 0)
	d.atLeast("general.max_connections", g.MaxConnections, 1)
	d.atLeast("general.max_concurrent_creates", g.MaxConcurrentCreates, 1)
	d.atLeast("general.tls_rate_limit_per_second", g.TLSRateLimitPerSecond, 0)
	d.atLeast("general.worker_threads", g.WorkerThreads, 1)
	d.atLeast("general.tokio_global_queue_interval", g.TokioGlobalQueueInterval, 0)
	d.atLeast("general.tokio_event_interval", g.TokioEventInterval, 0)
	d.atLeast("general.max_blocking_threads", g.MaxBlockingThreads, 0)
	d.atLeast("general.retain_connections_max", g.RetainConnectionsMax, 0)
	d.atLeast("general.tcp_so_linger", g.TCPSoLinger, 0)
	d.atLeast("general.tcp_keepalives_count", g.TCPKeepalivesCount, 0)
	d.atLeast("general.prepared_statements_cache_size", g.PreparedStatementsCacheSize, 0)
	d.atLeast("general.client_prepared_statements_cache_size", g.ClientPreparedStatementsCacheSize, 0)
	d.percent("general.scaling_warm_pool_ratio", g.ScalingWarmPoolRatio)
	d.atLeast("general.scaling_fast_retries", g.ScalingFastRetries, 0)
	d.atLeast("general.scaling_max_parallel_creates", g.ScalingMaxParallelCreates, 1)
	d.positive("general.connect_timeout", g.ConnectTimeout)
	d.positive("general.retain_connections_time", g.RetainConnectionsTime)
	if g.AdminUsername == "" {
		d.failf("general.admin_username", "must not be empty")
	}
	if g.UnixSocketDir != "" {
		if p := UnixSocketPath(g.UnixSocketDir, g.Port); len(p) > maxUnixSocketPath {
			d.failf("general.unix_socket_dir", "socket path %s is longer than %d bytes", p, maxUnixSocketPath)
		}
	}
	d.validateLogLevel(g.LogLevel, w)
	d.validateTLS(g)
	d.loadServerTLS(g)
	d.loadTalos(g)
	for i, cidr := range g.Hba {
		if _, err := netip.ParsePrefix(strings.TrimSpace(cidr)); err != nil {
			d.failf(fmt.Sprintf("general.hba[%d]", i), "invalid CIDR %q: want address/prefix like 10.0.0.0/8", cidr)
		}
	}
	if len(g.Hba) > 0 && g.PgHba.Set() {
		d.failf("general.pg_hba", "cannot be used together with the legacy general.hba list")
	}
	if g.PgHba.Set() {
		// Parsed here too, so that -t and a reload refuse what the
		// daemon's parse at start would (internal/daemon).
		if _, err := hba.Parse(g.PgHba.Content); err != nil {
			d.fail(g.PgHba.Key, err)
		}
	}
	d.validatePatroniURLs("general", g.PatroniAPIURLs)
	if raw := g.ServerLoginRetryPatroni; raw != "" {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.failf("general.server_login_retry_patroni", "must be an http:// or https:// URL with a host, got %q", raw)
		}
		if g.ServerLoginRetry <= 0 {
			d.failf("general.server_login_retry_patroni", "needs server_login_retry: without retries there is nothing to gate")
		}
	}
	for _, r := range thisPlatform.refusals(g) {
		d.failf(r.key, "%s", r.problem)
	}
	d.positive("general.fallback_cooldown", g.FallbackCooldown)
	d.positive("general.patroni_api_timeout", g.PatroniAPITimeout)
	d.positive("general.fallback_connect_timeout", g.FallbackConnectTimeout)
}

// validateLogLevel accepts exactly what the running process accepts
// (logging.ParseLevel); "default" is the documented default, info.
func (d *decoder) validateLogLevel(level string, w *[]string) {
	l, err := logging.ParseLevel(level, zapcore.InfoLevel)
	if err != nil {
		d.fail("general.log_level", err)
		return
	}
	for _, n := range l.Notices {
		*w = append(*w, "general.log_level: "+n)
	}
}

func (d *decoder) validateTLS(g *General) {
	d.oneOf("general.tls_mode", g.TLSMode, tlsModes)
	if (g.TLSCertificate == "") != (g.TLSPrivateKey == "") {
		d.failf("general.tls_certificate", "tls_certificate and tls_private_key must be set together")
	}
	if (g.TLSMode == "require" || g.TLSMode == "verify-full") && g.TLSCertificate == "" {
		d.failf("general.tls_mode", "%s needs tls_certificate and tls_private_key", g.TLSMode)
	}
	if g.TLSMode == "verify-full" && g.TLSCACert == "" {
		d.failf("general.tls_ca_cert", "required when tls_mode is verify-full")
	}
	d.oneOf("general.server_tls_mode", g.ServerTLSMode, serverTLSModes)
	if (g.ServerTLSCertificate == "") != (g.ServerTLSPrivateKey == "") {
		d.failf("general.server_tls_certificate", "server_tls_certificate and server_tls_private_key must be set together")
	}
	if (g.ServerTLSMode == "verify-ca" || g.ServerTLSMode == "verify-full") && g.ServerTLSCACert == "" {
		d.failf("general.server_tls_ca_cert", "required when server_tls_mode is %s", g.ServerTLSMode)
	}
}

func (d *decoder) validatePatroniURLs(path string, urls []string) {
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.failf(fmt.Sprintf("%s.patroni_api_urls[%d]", path, i), "must be an http:// or https:// URL with a host, got %q", raw)
		}
	}
}

func (d *decoder) validatePool(p *Pool, g *General, w *[]string) {
	key := "pools." + p.Name
	switch {
	case p.Name == "":
		d.failf(key, "database name must not be empty")
	case slices.Contains(adminDatabases, p.Name):
		d.failf(key, "%q is reserved for the admin console", p.Name)
	}
	if p.ServerHost == "" {
		d.failf(key+".server_host", "must not be empty")
	}
	d.portRange(key+".server_port", p.ServerPort)
	d.oneOf(key+".pool_mode", p.PoolMode, poolModes)
	d.atLeast(key+".max_db_connections", p.MaxDBConnections, 0)
	d.atLeast(key+".reserve_pool_size", p.ReservePoolSize, 0)
	d.atLeast(key+".min_guaranteed_pool_size", p.MinGuaranteedPoolSize, 0)
	d.validatePoolOverrides(key, p, g)
	if p.MaxDBConnections > 0 && g.QueryWaitTimeout < p.ReservePoolTimeout {
		*w = append(*w, fmt.Sprintf("%s.reserve_pool_timeout: %s is longer than general.query_wait_timeout %s, clients give up before the reserve pool is used",
			key, p.ReservePoolTimeout, g.QueryWaitTimeout))
	}
	if len(p.Users) == 0 && p.AuthQuery == nil {
		*w = append(*w, key+": no users and no auth_query, nobody can connect")
	}
	if p.AuthQuery != nil {
		d.validateAuthQuery(key+".auth_query", p.AuthQuery, w)
	}
	seen := map[string]int{}
	for i := range p.Users {
		ukey := fmt.Sprintf("%s.users[%d]", key, i)
		u := &p.Users[i]
		if j, dup := seen[u.Username]; dup && u.Username != "" {
			d.failf(ukey+".username", "duplicate username %q (also users[%d])", u.Username, j)
		}
		seen[u.Username] = i
		d.validateUser(ukey, u, w)
	}
}

// validatePoolOverrides checks the settings a pool inherits from general only
// where the pool changed them, so a bad general value is reported once.
func (d *decoder) validatePoolOverrides(key string, p *Pool, g *General) {
	if p.ConnectTimeout != g.ConnectTimeout {
		d.positive(key+".connect_timeout", p.ConnectTimeout)
	}
	if p.ScalingWarmPoolRatio != g.ScalingWarmPoolRatio {
		d.percent(key+".scaling_warm_pool_ratio", p.ScalingWarmPoolRatio)
	}
	if p.ScalingFastRetries != g.ScalingFastRetries {
		d.atLeast(key+".scaling_fast_retries", p.ScalingFastRetries, 0)
	}
	if !slices.Equal(p.PatroniAPIURLs, g.PatroniAPIURLs) {
		d.validatePatroniURLs(key, p.PatroniAPIURLs)
	}
	if p.FallbackCooldown != g.FallbackCooldown {
		d.positive(key+".fallback_cooldown", p.FallbackCooldown)
	}
	if p.PatroniAPITimeout != g.PatroniAPITimeout {
		d.positive(key+".patroni_api_timeout", p.PatroniAPITimeout)
	}
	if p.FallbackConnectTimeout != g.FallbackConnectTimeout {
		d.positive(key+".fallback_connect_timeout", p.FallbackConnectTimeout)
	}
}

func (d *decoder) validateUser(key string, u *User, w *[]string) {
	if u.Username == "" {
		d.failf(key+".username", "must not be empty")
	}
	d.atLeast(key+".pool_size", u.PoolSize, 1)
	if u.MinPoolSize < 0 || u.MinPoolSize > u.PoolSize {
		d.failf(key+".min_pool_size", "must be between 0 and pool_size %d, got %d", u.PoolSize, u.MinPoolSize)
	}
	if u.ServerPassword != "" && u.ServerUsername == "" {
		d.failf(key+".server_password", "requires server_username")
	}
	d.oneOf(key+".pool_mode", u.PoolMode, poolModes)
	switch {
	case u.AuthPamService != "":
		if strings.TrimSpace(u.AuthPamService) == "" {
			d.failf(key+".auth_pam_service", "must not be blank")
		}
	case u.Password == "":
		*w = append(*w, key+".password: empty, only clients matched by a pg_hba trust rule can log in")
	default:
		if err := CheckVerifier(u.Password); err != nil {
			d.fail(key+".password", err)
		}
	}
	d.checkUserAuth(key, u)
}

func (d *decoder) validateAuthQuery(key string, aq *AuthQuery, w *[]string) {
	if strings.TrimSpace(aq.Query) == "" {
		d.failf(key+".query", "must not be empty")
	} else if !strings.Contains(aq.Query, "$1") {
		*w = append(*w, key+".query: has no $1 placeholder for the user name")
	}
	if aq.User == "" {
		d.failf(key+".user", "must not be empty")
	}
	d.atLeast(key+".workers", aq.Workers, 1)
	d.atLeast(key+".pool_size", aq.PoolSize, 1)
	if aq.MinPoolSize < 0 || aq.MinPoolSize > aq.PoolSize {
		d.failf(key+".min_pool_size", "must be between 0 and pool_size %d, got %d", aq.PoolSize, aq.MinPoolSize)
	}
	if aq.ServerPassword != "" && aq.ServerUser == "" {
		d.failf(key+".server_password", "requires server_user")
	}
	// pg_doorman logs in with these itself: a plaintext password or an md5
	// hash work, a SCRAM verifier cannot answer a SCRAM challenge.
	for _, k := range []struct{ key, v string }{{".password", aq.Password}, {".server_password", aq.ServerPassword}} {
		if strings.HasPrefix(k.v, SCRAMPrefix) {
			d.failf(key+k.key, "is a SCRAM verifier, which cannot log in to PostgreSQL: give the plaintext password or the md5 hash")
		}
	}
	if aq.CacheTTL <= 0 {
		d.failf(key+".cache_ttl", "must be positive")
	}
	if aq.CacheFailureTTL < 0 || aq.MinInterval < 0 {
		d.failf(key, "cache_failure_ttl and min_interval must not be negative")
	}
}

func (d *decoder) portRange(key string, port int) {
	if port < 1 || port > 65535 {
		d.failf(key, "must be between 1 and 65535, got %d", port)
	}
}

func (d *decoder) atLeast(key string, v, lo int) {
	if v < lo {
		d.failf(key, "must be at least %d, got %d", lo, v)
	}
}

func (d *decoder) positive(key string, v time.Duration) {
	if v <= 0 {
		d.failf(key, "must be greater than 0")
	}
}

func (d *decoder) percent(key string, v int) {
	if v < 0 || v > 100 {
		d.failf(key, "must be between 0 and 100, got %d", v)
	}
}

func (d *decoder) oneOf(key, v string, allowed []string) {
	if !slices.Contains(allowed, v) {
		d.failf(key, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}
}

func sortedPoolNames(pools map[string]*Pool) []string {
	names := make([]string, 0, len(pools))
	for n := range pools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// UnixSocketPath is the PostgreSQL-style socket file for a listener:
// <dir>/.s.PGSQL.<port>.
func UnixSocketPath(dir string, port int) string {
	return strings.TrimRight(dir, "/") + "/.s.PGSQL." + strconv.Itoa(port)
}
