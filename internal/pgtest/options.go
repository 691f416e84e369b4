package pgtest

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

// Options configures a cluster. The zero value is usable.
type Options struct {
	// MaxConnections is max_connections; 0 means 200.
	MaxConnections int
	// PasswordEncryption is password_encryption: "scram-sha-256" (default) or "md5".
	PasswordEncryption string
	// HostAuthMethod is the pg_hba method of the final
	// "host all all 127.0.0.1/32" line; "" means scram-sha-256.
	HostAuthMethod string
	// ExtraConf holds more postgresql.conf settings; they win over the
	// harness's own, except port and unix_socket_directories, which are rejected.
	// Values that are not a single word are quoted.
	ExtraConf map[string]string
	// ExtraHba lines go into pg_hba.conf after "local all postgres trust"
	// and before every other line, so they can override the defaults.
	ExtraHba []string
	// TLS turns ssl on with TLS.Server as the server certificate and
	// TLS.CA as ssl_ca_file (for clientcert=verify-ca/verify-full rules).
	TLS *testcerts.Set
}

const (
	defaultMaxConnections = 200
	methodSCRAM           = "scram-sha-256"
	methodMD5             = "md5"
)

var (
	confKeyRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)
	confWordRE = regexp.MustCompile(`^(-?[0-9]+(\.[0-9]+)?|[A-Za-z0-9_]+)$`)
)

// withDefaults returns a validated copy of o with defaults filled in.
func (o Options) withDefaults() (Options, error) {
	if o.MaxConnections == 0 {
		o.MaxConnections = defaultMaxConnections
	}
	if o.PasswordEncryption == "" {
		o.PasswordEncryption = methodSCRAM
	}
	if o.HostAuthMethod == "" {
		o.HostAuthMethod = methodSCRAM
	}
	var errs []error
	if o.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("max connections %d: must be positive", o.MaxConnections))
	}
	if o.PasswordEncryption != methodSCRAM && o.PasswordEncryption != methodMD5 {
		errs = append(errs, fmt.Errorf("password encryption %q: want %q or %q", o.PasswordEncryption, methodSCRAM, methodMD5))
	}
	if strings.ContainsAny(o.HostAuthMethod, " \t\n#") {
		errs = append(errs, fmt.Errorf("host auth method %q: must be one word", o.HostAuthMethod))
	}
	for k := range o.ExtraConf {
		switch {
		case !confKeyRE.MatchString(k):
			errs = append(errs, fmt.Errorf("extra conf key %q: not a setting name", k))
		case k == "port" || k == "unix_socket_directories":
			errs = append(errs, fmt.Errorf("extra conf key %q: owned by the harness", k))
		}
	}
	for _, line := range o.ExtraHba {
		if strings.ContainsAny(line, "\n\r") {
			errs = append(errs, fmt.Errorf("extra hba line %q: contains a newline", line))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("invalid options: %w", err)
	}
	o.ExtraConf = cloneMap(o.ExtraConf)
	o.ExtraHba = append([]string(nil), o.ExtraHba...)
	return o, nil
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// serverConf is what one cluster's pgtest.conf depends on.
type serverConf struct {
	port        int
	socketDir   string
	clusterName string
	opts        Options
}

// render returns the contents of pgtest.conf, included from postgresql.conf.
func (s serverConf) render() string {
	settings := [][2]string{
		{"listen_addresses", "127.0.0.1"},
		{"port", fmt.Sprint(s.port)},
		{"unix_socket_directories", s.socketDir},
		{"cluster_name", s.clusterName},
		{"max_connections", fmt.Sprint(s.opts.MaxConnections)},
		{"shared_buffers", "32MB"},
		{"huge_pages", "off"},
		// Segments in the data directory go away with it even after a
		// SIGKILL; posix ones would pile up in /dev/shm.
		{"dynamic_shared_memory_type", "mmap"},
		{"fsync", "off"},
		{"synchronous_commit", "off"},
		{"full_page_writes", "off"},
		{"wal_level", "replica"},
		{"max_wal_senders", "10"},
		{"max_replication_slots", "10"},
		{"wal_keep_size", "128MB"},
		{"hot_standby", "on"},
		{"password_encryption", s.opts.PasswordEncryption},
		{"logging_collector", "off"},
		{"log_destination", "stderr"},
		{"log_connections", "on"},
		{"log_disconnections", "on"},
		{"log_line_prefix", "%m [%p] %q%u@%d "},
	}
	if s.opts.TLS != nil {
		settings = append(settings, [2]string{"ssl", "on"}, [2]string{"ssl_cert_file", "server.crt"},
			[2]string{"ssl_key_file", "server.key"}, [2]string{"ssl_ca_file", "root.crt"})
	}
	keys := make([]string, 0, len(s.opts.ExtraConf))
	for k := range s.opts.ExtraConf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		settings = append(settings, [2]string{k, s.opts.ExtraConf[k]})
	}
	var b strings.Builder
	b.WriteString("# written by pgtest; later lines win\n")
	for _, kv := range settings {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], confValue(kv[1]))
	}
	return b.String()
}

// confValue quotes v unless it is a single word or already quoted.
func confValue(v string) string {
	if confWordRE.MatchString(v) || (len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'') {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// renderHba returns pg_hba.conf: the superuser over the socket first, then
// the caller's lines, then the harness defaults, the per-user lines and the
// catch-all TCP line.
func renderHba(opts Options, userLines []string) string {
	var b strings.Builder
	b.WriteString("# written by pgtest; first match wins\n")
	b.WriteString("local all postgres trust\n")
	for _, l := range opts.ExtraHba {
		b.WriteString(l + "\n")
	}
	b.WriteString("local all all trust\n")
	b.WriteString("host all postgres 127.0.0.1/32 trust\n")
	b.WriteString("host replication all 127.0.0.1/32 trust\n")
	for _, l := range userLines {
		b.WriteString(l + "\n")
	}
	b.WriteString("host all all 127.0.0.1/32 " + opts.HostAuthMethod + "\n")
	return b.String()
}

// userHbaLine returns the per-user line that lets a user created with method
// log in over TCP, or "" when the cluster's catch-all method is not a
// password method (then the test chose the method on purpose).
func userHbaLine(defaultMethod, user, method string) string {
	if defaultMethod != methodSCRAM && defaultMethod != methodMD5 {
		return ""
	}
	return fmt.Sprintf("host all %s 127.0.0.1/32 %s", hbaQuote(user), method)
}

func hbaQuote(name string) string {
	return `"` + name + `"`
}
