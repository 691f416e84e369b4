package config

import (
	"crypto/rsa"
	"time"

	"github.com/doorman-go/doorman/internal/auth/token"
	"github.com/doorman-go/doorman/internal/servertls"
)

// Config is one loaded, defaulted, resolved and validated pg_doorman
// configuration. Treat it as read-only once Load has returned it: a reload
// builds a new Config instead of mutating the live one.
type Config struct {
	Path       string // file it was loaded from
	General    General
	Pools      map[string]*Pool // key = database name, case preserved
	Prometheus Prometheus
}

// General is the "general" section. Field order follows the settings
// reference so that Settings (SHOW CONFIG) lists keys in documented order.
type General struct {
	Host                              string        `cfg:"host"`
	Port                              int           `cfg:"port"`
	UnixSocketDir                     string        `cfg:"unix_socket_dir"` // extension
	Backlog                           int           `cfg:"backlog"`
	MaxConnections                    int           `cfg:"max_connections"`
	MaxConcurrentCreates              int           `cfg:"max_concurrent_creates"`
	TLSMode                           string        `cfg:"tls_mode"`
	TLSCACert                         string        `cfg:"tls_ca_cert"`
	TLSPrivateKey                     string        `cfg:"tls_private_key"`
	TLSCertificate                    string        `cfg:"tls_certificate"`
	TLSRateLimitPerSecond             int           `cfg:"tls_rate_limit_per_second"`
	DaemonPIDFile                     string        `cfg:"daemon_pid_file"`
	SyslogProgName                    string        `cfg:"syslog_prog_name"`
	LogClientConnections              bool          `cfg:"log_client_connections"`
	LogClientDisconnections           bool          `cfg:"log_client_disconnections"`
	LogLevel                          string        `cfg:"log_level"`
	WorkerThreads                     int           `cfg:"worker_threads"`
	WorkerCPUAffinityPinning          bool          `cfg:"worker_cpu_affinity_pinning"` // Tokio-specific, no-op
	TokioGlobalQueueInterval          int           `cfg:"tokio_global_queue_interval"` // Tokio-specific, no-op; 0 = not set
	TokioEventInterval                int           `cfg:"tokio_event_interval"`        // Tokio-specific, no-op; 0 = not set
	WorkerStackSize                   ByteSize      `cfg:"worker_stack_size"`           // Tokio-specific, no-op; 0 = not set
	MaxBlockingThreads                int           `cfg:"max_blocking_threads"`        // Tokio-specific, no-op; 0 = not set
	ConnectTimeout                    time.Duration `cfg:"connect_timeout"`
	QueryWaitTimeout                  time.Duration `cfg:"query_wait_timeout"`
	ServerLoginRetry                  time.Duration `cfg:"server_login_retry"`         // extension: retry a refused server connect while a client waits, 0 = fail at once
	ServerLoginRetryPatroni           string        `cfg:"server_login_retry_patroni"` // extension: the local Patroni's REST API; server_login_retry waits only while it holds the leader lock
	IdleTimeout                       time.Duration `cfg:"idle_timeout"`
	ServerLifetime                    time.Duration `cfg:"server_lifetime"`
	RetainConnectionsTime             time.Duration `cfg:"retain_connections_time"`
	RetainConnectionsMax              int           `cfg:"retain_connections_max"`
	ServerIdleCheckTimeout            time.Duration `cfg:"server_idle_check_timeout"`
	ServerRoundRobin                  bool          `cfg:"server_round_robin"`
	SyncServerParameters              bool          `cfg:"sync_server_parameters"`
	TCPSoLinger                       int           `cfg:"tcp_so_linger"`
	TCPNoDelay                        bool          `cfg:"tcp_no_delay"`
	TCPKeepalivesCount                int           `cfg:"tcp_keepalives_count"`
	TCPKeepalivesIdle                 time.Duration `cfg:"tcp_keepalives_idle,seconds"`
	TCPKeepalivesInterval             time.Duration `cfg:"tcp_keepalives_interval,seconds"`
	TCPUserTimeout                    time.Duration `cfg:"tcp_user_timeout,seconds"`
	UnixSocketBufferSize              ByteSize      `cfg:"unix_socket_buffer_size"`
	TCPSocketBufferSize               ByteSize      `cfg:"tcp_socket_buffer_size"` // extension: SO_RCVBUF/SO_SNDBUF of client sockets, 0 = kernel default
	TransactionLoop                   bool          `cfg:"transaction_loop"`       // extension: the transaction core (default on Linux), fixed at start
	AdminUsername                     string        `cfg:"admin_username"`
	AdminPassword                     string        `cfg:"admin_password,secret"`
	PreparedStatements                bool          `cfg:"prepared_statements"`
	PreparedStatementsCacheSize       int           `cfg:"prepared_statements_cache_size"`
	ClientPreparedStatementsCacheSize int           `cfg:"client_prepared_statements_cache_size"`
	MessageSizeToBeStream             ByteSize      `cfg:"message_size_to_be_stream"`
	ScalingWarmPoolRatio              int           `cfg:"scaling_warm_pool_ratio"`
	ScalingFastRetries                int           `cfg:"scaling_fast_retries"`
	ScalingMaxParallelCreates         int           `cfg:"scaling_max_parallel_creates"`
	MaxMemoryUsage                    ByteSize      `cfg:"max_memory_usage"`
	ShutdownTimeout                   time.Duration `cfg:"shutdown_timeout"`
	ProxyCopyDataTimeout              time.Duration `cfg:"proxy_copy_data_timeout"`
	ClientLoginTimeout                time.Duration `cfg:"client_login_timeout"`
	ServerTLSMode                     string        `cfg:"server_tls_mode"`
	ServerTLSCACert                   string        `cfg:"server_tls_ca_cert"`
	ServerTLSCertificate              string        `cfg:"server_tls_certificate"`
	ServerTLSPrivateKey               string        `cfg:"server_tls_private_key"`
	Hba                               []string      `cfg:"hba,custom"`
	PgHba                             PgHba         `cfg:"pg_hba,custom"`
	PoolerCheckQuery                  string        `cfg:"pooler_check_query"`
	Talos                             Talos         `cfg:"talos"`
	PatroniAPIURLs                    []string      `cfg:"patroni_api_urls"`
	FallbackCooldown                  time.Duration `cfg:"fallback_cooldown"`
	PatroniAPITimeout                 time.Duration `cfg:"patroni_api_timeout"`
	FallbackConnectTimeout            time.Duration `cfg:"fallback_connect_timeout"`
	FallbackLifetime                  time.Duration `cfg:"fallback_lifetime"` // default: FallbackCooldown

	// ServerTLS is the material the server_tls_* settings name, read and
	// parsed by Load (and Validate); nil only in a General never validated.
	ServerTLS *servertls.Material `cfg:"-"`
	// TalosKeys are the general.talos.keys files, read and parsed by Load
	// (nil without Talos).
	TalosKeys token.TalosKeys `cfg:"-"`
}

// PgHba is general.pg_hba: the text of a pg_hba.conf, either inline
// (Path empty) or read from Path at load time. It is not parsed here.
type PgHba struct {
	Path    string
	Content string
	Key     string // the key it came from: general.pg_hba, or general.hba in a pg_hba form
}

// Set reports whether any pg_hba rules source was configured.
func (h PgHba) Set() bool { return h.Path != "" || h.Content != "" }

// Talos is general.talos: public keys (file name without extension = kid)
// and the databases Talos tokens may open.
type Talos struct {
	Keys      []string `cfg:"keys"`
	Databases []string `cfg:"databases"`
}

// Pool is one pools.<name> entry. Inherited settings are already resolved.
type Pool struct {
	Name                            string        `cfg:"-"` // database name (map key)
	ServerHost                      string        `cfg:"server_host"`
	ServerPort                      int           `cfg:"server_port"`
	ServerDatabase                  string        `cfg:"server_database"` // resolved: Name when not set
	ApplicationName                 string        `cfg:"application_name"`
	ConnectTimeout                  time.Duration `cfg:"connect_timeout"`
	IdleTimeout                     time.Duration `cfg:"idle_timeout"`
	ServerLifetime                  time.Duration `cfg:"server_lifetime"`
	PoolMode                        string        `cfg:"pool_mode"` // "transaction" | "session"
	LogClientParameterStatusChanges bool          `cfg:"log_client_parameter_status_changes"`
	CleanupServerConnections        bool          `cfg:"cleanup_server_connections"`
	ScalingWarmPoolRatio            int           `cfg:"scaling_warm_pool_ratio"`
	ScalingFastRetries              int           `cfg:"scaling_fast_retries"`
	MaxDBConnections                int           `cfg:"max_db_connections"`
	MinConnectionLifetime           time.Duration `cfg:"min_connection_lifetime"`
	ReservePoolSize                 int           `cfg:"reserve_pool_size"`
	ReservePoolTimeout              time.Duration `cfg:"reserve_pool_timeout"`
	MinGuaranteedPoolSize           int           `cfg:"min_guaranteed_pool_size"`
	PatroniAPIURLs                  []string      `cfg:"patroni_api_urls"`
	FallbackCooldown                time.Duration `cfg:"fallback_cooldown"`
	PatroniAPITimeout               time.Duration `cfg:"patroni_api_timeout"`
	FallbackConnectTimeout          time.Duration `cfg:"fallback_connect_timeout"`
	FallbackLifetime                time.Duration `cfg:"fallback_lifetime"`
	AuthQuery                       *AuthQuery    `cfg:"auth_query,custom"` // nil when absent
	Users                           []User        `cfg:"users,custom"`
}

// User returns the static user called name, or nil.
func (p *Pool) User(name string) *User {
	for i := range p.Users {
		if p.Users[i].Username == name {
			return &p.Users[i]
		}
	}
	return nil
}

// AuthQuery is pools.<name>.auth_query: dynamic users looked up in
// PostgreSQL. ServerUser empty means passthrough mode.
type AuthQuery struct {
	Query           string        `cfg:"query"`
	User            string        `cfg:"user"`
	Password        string        `cfg:"password,secret"`
	Database        string        `cfg:"database"` // resolved: pool name when not set
	Workers         int           `cfg:"workers"`
	ServerUser      string        `cfg:"server_user"`
	ServerPassword  string        `cfg:"server_password,secret"`
	PoolSize        int           `cfg:"pool_size"`
	MinPoolSize     int           `cfg:"min_pool_size"`
	CacheTTL        time.Duration `cfg:"cache_ttl"`
	CacheFailureTTL time.Duration `cfg:"cache_failure_ttl"`
	MinInterval     time.Duration `cfg:"min_interval"`
}

// User is one pools.<name>.users[i] entry.
type User struct {
	Username       string         `cfg:"username"`
	Password       string         `cfg:"password,secret"` // md5/SCRAM verifier or jwt-pkey-fpath:<file>
	JWTKey         *rsa.PublicKey `cfg:"-"`               // the jwt-pkey-fpath: key, read by Load
	AuthPamService string         `cfg:"auth_pam_service"`
	ServerUsername string         `cfg:"server_username"`
	ServerPassword string         `cfg:"server_password,secret"`
	PoolSize       int            `cfg:"pool_size"`
	MinPoolSize    int            `cfg:"min_pool_size"`
	ServerLifetime time.Duration  `cfg:"server_lifetime"` // resolved: pool's when not set
	PoolMode       string         `cfg:"pool_mode"`       // resolved: user's override or the pool's
}

// Prometheus is the "prometheus" section (metrics exporter).
type Prometheus struct {
	Enabled bool   `cfg:"enabled"`
	Host    string `cfg:"host"`
	Port    int    `cfg:"port"`
}

// Documented defaults that pools and users fall back to.
const (
	DefaultPoolMode         = "transaction"
	DefaultUserPoolSize     = 40
	DefaultServerHost       = "127.0.0.1"
	DefaultServerPort       = 5432
	DefaultAuthQueryWorkers = 2
)

// Default returns a Config holding every documented default and no pools.
func Default() *Config {
	return &Config{
		General:    defaultGeneral(),
		Pools:      map[string]*Pool{},
		Prometheus: Prometheus{Enabled: false, Host: "0.0.0.0", Port: 9127},
	}
}

func defaultGeneral() General {
	g := General{
		Host:                        "0.0.0.0",
		Port:                        5432,
		UnixSocketDir:               "/tmp",
		MaxConnections:              8192,
		MaxConcurrentCreates:        4,
		TLSMode:                     "allow",
		DaemonPIDFile:               "/tmp/pg_doorman.pid",
		LogClientConnections:        true,
		LogClientDisconnections:     true,
		LogLevel:                    "info",
		WorkerThreads:               4,
		ConnectTimeout:              3 * time.Second,
		QueryWaitTimeout:            5 * time.Second,
		IdleTimeout:                 10 * time.Minute,
		ServerLifetime:              20 * time.Minute,
		RetainConnectionsTime:       30 * time.Second,
		RetainConnectionsMax:        3,
		ServerIdleCheckTimeout:      60 * time.Second,
		TCPNoDelay:                  true,
		TCPKeepalivesCount:          5,
		TCPKeepalivesIdle:           5 * time.Second,
		TCPKeepalivesInterval:       5 * time.Second,
		TCPUserTimeout:              thisPlatform.defaultTCPUserTimeout(),
		UnixSocketBufferSize:        1 << 20,
		AdminUsername:               "admin",
		AdminPassword:               "admin",
		PreparedStatements:          true,
		PreparedStatementsCacheSize: 8192,
		MessageSizeToBeStream:       1 << 20,
		ScalingWarmPoolRatio:        20,
		ScalingFastRetries:          10,
		ScalingMaxParallelCreates:   2,
		MaxMemoryUsage:              256 << 20,
		ShutdownTimeout:             10 * time.Second,
		ProxyCopyDataTimeout:        15 * time.Second,
		ClientLoginTimeout:          60 * time.Second,
		ServerTLSMode:               "allow",
		ServerTLS:                   servertls.FromMode(servertls.Allow),
		PoolerCheckQuery:            ";",
		FallbackCooldown:            30 * time.Second,
		PatroniAPITimeout:           5 * time.Second,
		FallbackConnectTimeout:      5 * time.Second,
		FallbackLifetime:            30 * time.Second,
		// The transaction core exists on Linux only (internal/session).
		TransactionLoop: thisPlatform.core(),
	}
	// Not the seed's 0 (unlimited): a client that never deallocates must
	// not grow without bound; 0 still lifts the count bound (the byte
	// bound of docs/prepared-statements.md stays).
	g.ClientPreparedStatementsCacheSize = DefaultClientPreparedStatementsCacheSize
	return g
}

// DefaultClientPreparedStatementsCacheSize bounds a client's statement
// names: above every common driver cache (pgx 512, PgJDBC 256, psycopg 100).
const DefaultClientPreparedStatementsCacheSize = 1024

// NewPool returns a pool named name with documented defaults and the
// inheritable settings copied from g, as Load builds it before decoding the
// pool's keys. Useful for building a Config in code (then call Validate).
func NewPool(name string, g *General) *Pool {
	return &Pool{
		Name:                     name,
		ServerDatabase:           name,
		ServerHost:               DefaultServerHost,
		ServerPort:               DefaultServerPort,
		ConnectTimeout:           g.ConnectTimeout,
		IdleTimeout:              g.IdleTimeout,
		ServerLifetime:           g.ServerLifetime,
		PoolMode:                 DefaultPoolMode,
		CleanupServerConnections: true,
		ScalingWarmPoolRatio:     g.ScalingWarmPoolRatio,
		ScalingFastRetries:       g.ScalingFastRetries,
		MinConnectionLifetime:    30 * time.Second,
		ReservePoolTimeout:       3 * time.Second,
		PatroniAPIURLs:           append([]string(nil), g.PatroniAPIURLs...),
		FallbackCooldown:         g.FallbackCooldown,
		PatroniAPITimeout:        g.PatroniAPITimeout,
		FallbackConnectTimeout:   g.FallbackConnectTimeout,
		FallbackLifetime:         g.FallbackLifetime,
	}
}

func defaultAuthQuery(pool string) *AuthQuery {
	return &AuthQuery{
		Database:        pool,
		Workers:         DefaultAuthQueryWorkers,
		PoolSize:        DefaultUserPoolSize,
		CacheTTL:        time.Hour,
		CacheFailureTTL: 30 * time.Second,
		MinInterval:     time.Second,
	}
}

// NewUser returns a user of p with documented defaults and the settings a
// user inherits from its pool.
func NewUser(p *Pool, username string) User {
	return User{Username: username, PoolSize: DefaultUserPoolSize, ServerLifetime: p.ServerLifetime, PoolMode: p.PoolMode}
}
