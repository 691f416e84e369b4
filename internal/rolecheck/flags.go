package rolecheck

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// ConnFlags are the connection flags shared by `pgrole_check check` and
// `pgrole_check serve`. Register binds them; Resolve turns them, HAProxy's
// arguments and the environment into Options.
type ConnFlags struct {
	Role, Method     string
	Host             string
	Port             int
	User, Database   string
	Password         string
	PasswordFile     string
	Timeout          time.Duration
	ConnectTimeout   time.Duration
	MaxLag           string
	QuietDisconnect  bool
	ApplicationName  string
	hostSet, portSet func() bool
}

// Register adds the flags to fs.
func (f *ConnFlags) Register(fs *pflag.FlagSet, withRole bool) {
	if withRole {
		fs.StringVar(&f.Role, "role", "primary", "wanted role: primary, replica or any")
	}
	fs.StringVar(&f.Method, "method", "hot_standby", "hot_standby (in_hot_standby at login, no query) or recovery (SELECT pg_is_in_recovery())")
	fs.StringVar(&f.Host, "host", "127.0.0.1", "server host, or a unix socket directory (default: HAProxy's server address)")
	fs.IntVar(&f.Port, "port", 5432, "server port (default: HAProxy's server port)")
	fs.StringVar(&f.User, "user", "", "user name (default $PGUSER, else postgres)")
	fs.StringVar(&f.Database, "database", "", "database (default $PGDATABASE, else postgres)")
	fs.StringVar(&f.Password, "password", "", "password (visible in ps: prefer --password-file or $PGPASSWORD)")
	fs.StringVar(&f.PasswordFile, "password-file", "", "file whose first line is the password")
	fs.DurationVar(&f.Timeout, "timeout", DefaultTimeout, "overall timeout of one check")
	fs.DurationVar(&f.ConnectTimeout, "connect-timeout", DefaultConnectTimeout, "TCP connect timeout")
	fs.StringVar(&f.MaxLag, "max-lag", "", "maximum replay lag of a replica, e.g. 16MB (default: no limit)")
	fs.BoolVar(&f.QuietDisconnect, "quiet-disconnect", false, "send log_disconnections=off (superuser or GRANT SET ON PARAMETER needed)")
	fs.StringVar(&f.ApplicationName, "application-name", "pgrole_check", "application_name of the check connection")
	f.hostSet = func() bool { return fs.Changed("host") }
	f.portSet = func() bool { return fs.Changed("port") }
}

// Resolve builds Options. args are the positional arguments: none, or
// HAProxy's four (proxy_addr proxy_port server_addr server_port), whose
// server address and port win over the flags. Without them, HAProxy's
// HAPROXY_SERVER_ADDR/PORT apply when --host/--port were not given.
func (f *ConnFlags) Resolve(args []string, getenv func(string) string) (Options, error) {
	o := Options{Host: f.Host, Port: f.Port, User: f.User, Database: f.Database, Timeout: f.Timeout,
		ConnectTimeout: f.ConnectTimeout, QuietDisconnect: f.QuietDisconnect, ApplicationName: f.ApplicationName}
	var errs []error
	switch len(args) {
	case 0:
		if a := getenv("HAPROXY_SERVER_ADDR"); a != "" && (f.hostSet == nil || !f.hostSet()) {
			o.Host = a
		}
		if p := getenv("HAPROXY_SERVER_PORT"); p != "" && (f.portSet == nil || !f.portSet()) {
			args = []string{"", "", o.Host, p}
		}
	case 4:
		o.Host = args[2]
	default:
		return o, fmt.Errorf("want no arguments or HAProxy's four (proxy_addr proxy_port server_addr server_port), got %d", len(args))
	}
	if len(args) == 4 && args[3] != "" {
		p, err := strconv.Atoi(args[3])
		if err != nil {
			errs = append(errs, fmt.Errorf("server port %q: %w", args[3], err))
		}
		o.Port = p
	}
	if f.Role != "" {
		r, err := ParseRole(f.Role)
		errs = append(errs, err)
		o.Role = r
	}
	m, err := ParseMethod(f.Method)
	errs = append(errs, err)
	o.Method = m
	if f.MaxLag != "" {
		n, err := ParseSize(f.MaxLag)
		errs = append(errs, err)
		o.MaxLag = n
	}
	if o.User == "" {
		o.User = orDefault(getenv("PGUSER"), "postgres")
	}
	if o.Database == "" {
		o.Database = orDefault(getenv("PGDATABASE"), "postgres")
	}
	pw, err := f.password(getenv)
	errs = append(errs, err)
	o.Password = pw
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	return o.Normalize()
}

// password: --password-file, else --password, else $PGPASSWORD.
func (f *ConnFlags) password(getenv func(string) string) (string, error) {
	if f.PasswordFile != "" {
		b, err := os.ReadFile(f.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("read password file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimSuffix(line, "\r"), nil
	}
	if f.Password != "" {
		return f.Password, nil
	}
	return getenv("PGPASSWORD"), nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
