package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/doorman-go/doorman/internal/pgtest/testcerts"
)

// Target names of the TLS section: the poolers with TLS from clients keep
// the usual names; the same poolers without TLS are the baseline.
const (
	TargetPgBouncerPlain = "pgbouncer, no TLS"
	TargetDoormanPlain   = "pg_doorman, no TLS"
)

// tlsTargetOrder is the column order of the TLS section's tables.
var tlsTargetOrder = [...]string{TargetPgBouncer, TargetDoorman, TargetPgBouncerPlain, TargetDoormanPlain}

// TLSReport is what the TLS section measured: pgbench -S with
// PGSSLMODE=require through both poolers (and plaintext through fresh
// instances of the same poolers, as the baseline).
type TLSReport struct {
	Cases   []CaseResult // one connection per client for the whole run
	Connect []CaseResult // pgbench -C: a new connection, and a TLS handshake, per transaction
	WarmUps []WarmUp     // the four poolers' runs before the first round, not counted
}

// tlsCases lists the TLS section's cases: select-only over the simple and
// the extended protocol at each client count, and one -C case.
func tlsCases(clients []int, connectClients int) (cases, connect []Case) {
	for _, mode := range []string{"simple", "extended"} {
		for _, c := range clients {
			cases = append(cases, Case{Script: ScriptSelectOnly, Mode: mode, Clients: c})
		}
	}
	connect = []Case{{Script: ScriptSelectOnly, Mode: "simple", Clients: connectClients, Connect: true}}
	return cases, connect
}

// runTLS starts both poolers twice, with TLS from clients (one certificate
// made now into the work directory) and without, and runs the TLS cases
// against the four, interleaved, after warming each up as section 1 does
// (over TLS for the two that require it).
func runTLS(ctx context.Context, s Settings, cfg poolerConfig, rn *runner) (rep TLSReport, err error) {
	certs, err := makeCerts(filepath.Join(cfg.dir, "certs"))
	if err != nil {
		return rep, err
	}
	tlsCfg := cfg
	tlsCfg.tls = certs.Server
	var targets []target
	for _, p := range []struct {
		name, tag, bin string
		start          startFunc
		cfg            poolerConfig
	}{
		{TargetPgBouncer, "pgbouncer-tls", s.PgBouncerBin, startPgBouncer, tlsCfg},
		{TargetDoorman, "doorman-tls", s.DoormanBin, startDoorman, tlsCfg},
		{TargetPgBouncerPlain, "pgbouncer-plain", s.PgBouncerBin, startPgBouncer, cfg},
		{TargetDoormanPlain, "doorman-plain", s.DoormanBin, startDoorman, cfg},
	} {
		var pl *pooler
		if pl, err = p.start(ctx, p.bin, p.tag, p.cfg); err != nil {
			return rep, fmt.Errorf("start %s: %w", p.name, err)
		}
		defer func() { err = errors.Join(err, pl.proc.stop()) }()
		targets = append(targets, poolerTarget(p.name, pl, benchDB))
	}
	if err = rn.warmUp(ctx, targets, s.TLSClients, &rep.WarmUps); err != nil {
		return rep, err
	}
	cases, connect := tlsCases(s.TLSClients, s.TLSConnectClients)
	if rep.Cases, err = rn.runCases(ctx, cases, targets, s.Rounds); err != nil {
		return rep, err
	}
	rep.Connect, err = rn.runCases(ctx, connect, targets, s.Rounds)
	return rep, err
}

// makeCerts writes a throwaway CA and a server certificate for 127.0.0.1
// into dir, readable by PgBouncer (the postgres OS user when we are root).
func makeCerts(dir string) (*testcerts.Set, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create certificate dir: %w", err)
	}
	certs, err := testcerts.New(dir)
	if err != nil {
		return nil, fmt.Errorf("make test certificates: %w", err)
	}
	cred, err := postgresCredential()
	if err != nil || cred == nil {
		return certs, err
	}
	for _, path := range []string{certs.Server.Cert, certs.Server.Key} {
		if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown %s: %w", path, err)
		}
	}
	return certs, nil
}
