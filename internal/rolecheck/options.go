package rolecheck

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Role is the role a route wants.
type Role string

// Roles a check can ask for.
const (
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
	RoleAny     Role = "any"
)

// Method is how the role is learnt.
type Method string

// Methods of learning the role.
const (
	// MethodHotStandby reads in_hot_standby from the ParameterStatus messages
	// a PostgreSQL 14+ server sends right after authentication: no query.
	MethodHotStandby Method = "hot_standby"
	// MethodRecovery runs SELECT pg_is_in_recovery(): one more round trip,
	// but it proves the server executes SQL.
	MethodRecovery Method = "recovery"
)

// Default timeouts of a check.
const (
	DefaultTimeout        = 2 * time.Second
	DefaultConnectTimeout = time.Second
)

// ParseRole accepts primary (also master, read-write), replica (also standby)
// and any.
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "primary", "master", "read-write", "rw":
		return RolePrimary, nil
	case "replica", "standby":
		return RoleReplica, nil
	case "any":
		return RoleAny, nil
	}
	return "", fmt.Errorf("unknown role %q (want primary, replica or any)", s)
}

// ParseMethod accepts hot_standby (also in_hot_standby) and recovery (also
// pg_is_in_recovery).
func ParseMethod(s string) (Method, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "hot_standby", "in_hot_standby", "hot-standby":
		return MethodHotStandby, nil
	case "recovery", "pg_is_in_recovery", "query":
		return MethodRecovery, nil
	}
	return "", fmt.Errorf("unknown method %q (want hot_standby or recovery)", s)
}

// Options says where and how to check. The zero value of each field means
// its default (see Normalize). Options are plain values: copy freely.
type Options struct {
	Host     string // TCP host, or a unix socket directory when it starts with "/"
	Port     int    // 5432 if 0
	User     string // required
	Database string // "" means the user name
	Password string // never logged; empty means none offered
	Role     Role
	Method   Method
	// ConnectTimeout bounds the TCP connect, Timeout the whole check.
	ConnectTimeout time.Duration
	Timeout        time.Duration
	// MaxLag in bytes: a replica lagging more does not match. 0 means no
	// limit. Measuring lag takes a query even with MethodHotStandby.
	MaxLag int64
	// QuietDisconnect sends log_disconnections=off in the startup packet.
	// PostgreSQL allows it only to superusers or, from 15 on, to roles
	// granted SET ON PARAMETER log_disconnections.
	QuietDisconnect bool
	// ApplicationName is sent when not empty.
	ApplicationName string
}

// Normalize fills defaults and validates.
func (o Options) Normalize() (Options, error) {
	var errs []error
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = 5432
	}
	if o.Port < 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d out of range", o.Port))
	}
	if o.User == "" {
		errs = append(errs, errors.New("user is required"))
	}
	if o.Database == "" {
		o.Database = o.User
	}
	if o.Role == "" {
		o.Role = RolePrimary
	}
	if _, err := ParseRole(string(o.Role)); err != nil {
		errs = append(errs, err)
	}
	if o.Method == "" {
		o.Method = MethodHotStandby
	}
	if _, err := ParseMethod(string(o.Method)); err != nil {
		errs = append(errs, err)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ConnectTimeout <= 0 || o.ConnectTimeout > o.Timeout {
		o.ConnectTimeout = min(DefaultConnectTimeout, o.Timeout)
	}
	if o.MaxLag < 0 {
		errs = append(errs, fmt.Errorf("max lag %d is negative", o.MaxLag))
	}
	return o, errors.Join(errs...)
}

// Addr is host:port for TCP, or the socket path for a unix socket directory.
func (o Options) Addr() string {
	if strings.HasPrefix(o.Host, "/") {
		return fmt.Sprintf("%s/.s.PGSQL.%d", strings.TrimRight(o.Host, "/"), o.Port)
	}
	return fmt.Sprintf("%s:%d", o.Host, o.Port)
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}, {"KB", 1 << 10}, {"B", 1},
}

// ParseSize parses a byte count such as 16MB, 512kB, 1GB or 1048576 (bytes),
// PostgreSQL's units (powers of 1024).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty size")
	}
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 16MB, 512kB or bytes)", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return n * mult, nil
}

// FormatSize prints n bytes with the largest exact PostgreSQL unit.
func FormatSize(n int64) string {
	for _, u := range sizeUnits[:4] {
		if u.suffix == "KB" {
			continue
		}
		if n != 0 && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.suffix)
		}
	}
	return fmt.Sprintf("%dB", n)
}
