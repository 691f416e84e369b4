package rolecheck

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Variant is the kind of health check a generated HAProxy config uses.
type Variant string

// Check variants of seed 001 plus the external command.
const (
	// VariantHotStandby: tcp-check sends the startup packet and expects
	// in_hot_standby off/on. The check user must be trusted in pg_hba.conf.
	VariantHotStandby Variant = "hot_standby"
	// VariantRecovery: tcp-check runs SELECT pg_is_in_recovery(). The check
	// user must be trusted in pg_hba.conf.
	VariantRecovery Variant = "recovery"
	// VariantHTTP: option httpchk against `pgrole_check serve` on each node.
	VariantHTTP Variant = "httpchk"
	// VariantExternal: external-check command runs pgrole_check check (with
	// passwords and every method), through wrapper scripts.
	VariantExternal Variant = "external"
)

// HAProxyServer is one PostgreSQL (or pg_doorman) node.
type HAProxyServer struct {
	Name string
	Host string
	Port int
}

// HAProxyOptions configures HAProxyConfig. Zero values mean the defaults
// noted on each field.
type HAProxyOptions struct {
	Variant  Variant // VariantHotStandby if empty
	Name     string  // section name prefix; "pg" if empty
	Bind     string  // bind address; "*" if empty
	Servers  []HAProxyServer
	User     string // check user (tcp-check variants), "postgres" if empty
	Database string // check database, "template1" if empty
	// QuietDisconnect adds log_disconnections=off to the startup packet
	// (needs a superuser or GRANT SET ON PARAMETER log_disconnections).
	QuietDisconnect bool
	WritePort       int // 5000 if 0
	ReadPort        int // 5001 if 0; -1 leaves the read port out
	Inter           time.Duration
	FastInter       time.Duration
	DownInter       time.Duration
	Rise, Fall      int
	CheckTimeout    time.Duration
	SidecarPort     int    // httpchk: the port of pgrole_check serve, 8010 if 0
	MaxLag          int64  // httpchk: ?lag= on the read port; 0 none
	CommandPrimary  string // external: wrapper that checks for a primary
	CommandReplica  string // external: wrapper that checks for a replica
	HAProxyVersion  string // "2.6" if empty; init-state down needs 3.1+
	StatsSocket     string // adds "stats socket <path> level admin" if set
}

func (o HAProxyOptions) withDefaults() (HAProxyOptions, error) {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def((*string)(&o.Variant), string(VariantHotStandby))
	def(&o.Name, "pg")
	def(&o.Bind, "*")
	def(&o.User, "postgres")
	def(&o.Database, "template1")
	def(&o.HAProxyVersion, "2.6")
	def(&o.CommandPrimary, "/usr/local/bin/pgrole_check-primary")
	def(&o.CommandReplica, "/usr/local/bin/pgrole_check-replica")
	defDur := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defDur(&o.Inter, 2*time.Second)
	defDur(&o.FastInter, 100*time.Millisecond)
	defDur(&o.DownInter, o.Inter)
	defDur(&o.CheckTimeout, 2*time.Second)
	if o.Rise <= 0 {
		o.Rise = 2
	}
	if o.Fall <= 0 {
		o.Fall = 3
	}
	if o.WritePort == 0 {
		o.WritePort = 5000
	}
	if o.ReadPort == 0 {
		o.ReadPort = 5001
	}
	if o.SidecarPort == 0 {
		o.SidecarPort = 8010
	}
	var errs []error
	switch o.Variant {
	case VariantHotStandby, VariantRecovery, VariantHTTP, VariantExternal:
	default:
		errs = append(errs, fmt.Errorf("unknown variant %q (want hot_standby, recovery, httpchk or external)", o.Variant))
	}
	if len(o.Servers) == 0 {
		errs = append(errs, errors.New("no servers"))
	}
	for i, s := range o.Servers {
		if s.Name == "" || s.Host == "" || s.Port <= 0 || s.Port > 65535 {
			errs = append(errs, fmt.Errorf("server %d: want name=host:port, got %+v", i+1, s))
		}
	}
	return o, errors.Join(errs...)
}

// ParseHAProxyServer parses "name=host:port" or "host:port" (the name is then
// made from the index, pg1, pg2, ...).
func ParseHAProxyServer(s string, index int) (HAProxyServer, error) {
	name, addr, ok := strings.Cut(s, "=")
	if !ok {
		name, addr = fmt.Sprintf("pg%d", index+1), s
	}
	host, portStr, ok := strings.Cut(addr, ":")
	port, err := strconv.Atoi(portStr)
	if !ok || host == "" || err != nil || port <= 0 || port > 65535 {
		return HAProxyServer{}, fmt.Errorf("server %q: want name=host:port", s)
	}
	return HAProxyServer{Name: name, Host: host, Port: port}, nil
}

// TCPCheckLines returns the tcp-check directives of a tcp-check variant for
// the wanted role (replica false: primary). Each message goes out in one
// send-binary (one TCP segment); Terminate is sent before the last expect so
// that a failing expect, which stops the rule list, still closes cleanly.
func TCPCheckLines(v Variant, user, database string, quiet, replica bool) []string {
	startup := hex.EncodeToString(StartupPacket(user, database, quiet, ""))
	term := hex.EncodeToString(TerminatePacket())
	lines := []string{"option tcp-check", "tcp-check connect linger", "tcp-check send-binary " + startup}
	if v == VariantRecovery {
		return append(lines,
			"tcp-check expect binary "+hex.EncodeToString(ReadyForQueryPrefix()),
			"tcp-check send-binary "+hex.EncodeToString(QueryPacket(RecoveryQuery)),
			"tcp-check send-binary "+term,
			"tcp-check expect binary "+hex.EncodeToString(RecoveryPattern(replica)))
	}
	return append(lines,
		"tcp-check expect binary "+hex.EncodeToString(HotStandbyPattern(replica)),
		"tcp-check send-binary "+term)
}

// ExternalWrapper returns a /bin/sh script for HAProxy's "external-check
// command", which takes no arguments of its own: it runs binary with args
// and passes on HAProxy's four arguments.
func ExternalWrapper(binary string, args []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# external-check command for HAProxy, generated by pgrole_check.\n")
	b.WriteString("exec " + shellQuote(binary) + " check")
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" \"$@\"\n")
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// versionAtLeast compares "major.minor" versions.
func versionAtLeast(v string, major, minor int) bool {
	ma, mi, _ := strings.Cut(v, ".")
	a, _ := strconv.Atoi(ma)
	b, _ := strconv.Atoi(strings.SplitN(mi, ".", 2)[0])
	return a > major || (a == major && b >= minor)
}
