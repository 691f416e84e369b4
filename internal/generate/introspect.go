package generate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Options says how to reach PostgreSQL. Empty fields fall back to the
// libpq environment (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, and
// ~/.pgpass), as pgx reads it; with neither, Database is "postgres".
type Options struct {
	Host     string // name, address or unix socket directory
	Port     int    // 0: PGPORT or 5432
	User     string
	Password string
	Database string // only the database Introspect connects to
}

// Inventory is what Introspect found.
type Inventory struct {
	ServerHost string // as connected: an address, a name or a socket directory
	ServerPort int
	Databases  []string // datallowconn and not templates, sorted
	Roles      []Role   // login roles, sorted
	Source     string   // catalogue the verifiers came from: pg_authid or pg_shadow
}

// Role is one login role. Verifier is rolpassword as stored (md5... or
// SCRAM-SHA-256$...), "" when the role has no password.
type Role struct {
	Name     string
	Verifier string
}

// Introspect connects to PostgreSQL and lists the databases that accept
// connections and the login roles with their password verifiers. Reading
// verifiers needs a superuser: pg_authid first, then pg_shadow.
func Introspect(ctx context.Context, o Options) (*Inventory, error) {
	cc, err := pgx.ParseConfig(o.dsn())
	if err != nil {
		return nil, fmt.Errorf("connection options: %w", err)
	}
	for _, fb := range cc.Fallbacks {
		if fb.Host != cc.Host || fb.Port != cc.Port {
			// The pools would point at whichever answered first.
			return nil, fmt.Errorf("connection options name several servers (%s:%d, %s:%d): give one", cc.Host, cc.Port, fb.Host, fb.Port)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	inv := &Inventory{ServerHost: cc.Host, ServerPort: int(cc.Port)}
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname")
	if err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	if inv.Databases, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	if inv.Roles, inv.Source, err = roles(ctx, conn); err != nil {
		return nil, err
	}
	return inv, nil
}

var roleQueries = []struct{ source, sql string }{
	{"pg_authid", "SELECT rolname, coalesce(rolpassword, '') FROM pg_authid WHERE rolcanlogin ORDER BY rolname"},
	{"pg_shadow", "SELECT usename, coalesce(passwd, '') FROM pg_shadow ORDER BY usename"},
}

func roles(ctx context.Context, conn *pgx.Conn) ([]Role, string, error) {
	var errs []error
	for _, q := range roleQueries {
		rows, err := conn.Query(ctx, q.sql)
		if err == nil {
			var rs []Role
			rs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Role, error) {
				var r Role
				err := row.Scan(&r.Name, &r.Verifier)
				return r, err
			})
			if err == nil {
				return rs, q.source, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", q.source, err))
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" { // insufficient_privilege
			break
		}
	}
	return nil, "", fmt.Errorf("read password verifiers (needs a superuser): %w", errors.Join(errs...))
}

// lookupEnv reads the environment; the one place the package does.
var lookupEnv = os.Getenv

// dsn is a keyword/value connection string of the options set; pgx fills
// in the rest from the environment.
func (o Options) dsn() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+dsnQuote(v))
		}
	}
	add("host", o.Host)
	if o.Port != 0 {
		add("port", strconv.Itoa(o.Port))
	}
	add("user", o.User)
	add("password", o.Password)
	db := o.Database
	if db == "" && lookupEnv("PGDATABASE") == "" {
		db = "postgres" // pgx would take the user name, rarely a database
	}
	add("dbname", db)
	return strings.Join(parts, " ")
}

func dsnQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
