// Package config loads, defaults, resolves and validates the pg_doorman
// configuration (YAML .yaml/.yml or legacy TOML .toml, chosen by extension).
//
// Load reads each file once and parses it twice: through viper for every
// section but pools, and raw (yaml.v3 / go-toml/v2) for pools, because viper
// lower-cases map keys while pool names are case-sensitive database names.
// Decoding is strict: unknown keys (also upper-case spellings outside pools)
// are errors. All problems come back at once via errors.Join as *KeyError,
// each message starting with its key path; warnings come back separately,
// even on error. A documented key whose value asks for behaviour pg_doorman
// lacks (PAM in a build without it) is refused with
// ErrNotImplemented (unimplemented.go); documented defaults always load.
// Files that settings name are read at load, so that -t and a reload catch
// them: client and server TLS material, Talos and JWT public keys (a
// reload is how a rotated key is picked up), PAM service files (checked to
// exist).
// Tokio-only keys are accepted and only warn when set.
//
// Sources, later overriding earlier for general/prometheus keys: defaults,
// the main file, include.files in order (relative to the main file, no
// nested include), then PG_DOORMAN_GENERAL_<KEY> / PG_DOORMAN_PROMETHEUS_<KEY>
// for scalar keys. A pool in two files is an error naming both. Inheritance
// is resolved (pool timeouts, scaling and Patroni keys from general; user
// server_lifetime and pool_mode from the pool; server_database and
// auth_query.database default to the pool name; max_concurrent_creates
// lowers scaling_max_parallel_creates), so consumers read plain fields.
// Durations: bare integer = ms, or "100ms"/"5s"/"5m"/"1h"/"1d";
// tcp_keepalives_idle/interval and tcp_user_timeout are integer seconds.
// Sizes: bare integer = bytes, or B/K/KB/M/MB/G/GB (binary, any case).
//
// Extensions: general.unix_socket_dir, general.tcp_socket_buffer_size,
// general.server_login_retry, general.server_login_retry_patroni,
// general.transaction_loop. pg_hba text is parsed at load only to refuse
// what the daemon would; the daemon parses it again for its rules. Settings and
// Redacted mask secrets. A loaded *Config is read-only and safe to share.
package config
