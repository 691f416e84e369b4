package bdd

import (
	"fmt"
	"strings"

	"github.com/cucumber/godog"
	"github.com/jackc/pgx/v5"
)

// registerPostgresSteps: the PostgreSQL server behind pg_doorman and what
// the scenarios check on it directly.
func (s *scenario) registerPostgresSteps(sc *godog.ScenarioContext) {
	sc.Step(`^a PostgreSQL server$`, s.aPostgreSQLServer)
	sc.Step(`^a PostgreSQL user "([^"]*)" with password "([^"]*)" stored as (SCRAM|MD5)$`, s.aPostgreSQLUser)
	sc.Step(`^a database "([^"]*)" with a table "([^"]*)" that "([^"]*)" may write to$`, s.aDatabaseWithTable)
	sc.Step(`^table "([^"]*)" of database "([^"]*)" has (\d+) rows?$`, s.tableHasRows)
	sc.Step(`^PostgreSQL has no connections of user "([^"]*)"$`, s.noConnectionsOf)
}

func (s *scenario) aPostgreSQLServer() error {
	pg, err := s.env.postgres()
	if err != nil {
		return err
	}
	s.pg = pg
	return nil
}

func (s *scenario) aPostgreSQLUser(name, password, method string) error {
	if err := s.needPG(); err != nil {
		return err
	}
	m := map[string]string{"SCRAM": "scram-sha-256", "MD5": "md5"}[method]
	verifier, err := s.env.user(s.t, name, password, m)
	if err != nil {
		return err
	}
	want := map[string]string{"SCRAM": "SCRAM-SHA-256$", "MD5": "md5"}[method]
	if !strings.HasPrefix(verifier, want) {
		return fmt.Errorf("user %s: verifier %.20q... is not %s", name, verifier, method)
	}
	s.users[name] = verifier
	return nil
}

// aDatabaseWithTable creates a database for this scenario only: the
// cleanup drops it and ends every connection to it, such as those of a
// pg_doorman the scenario killed.
func (s *scenario) aDatabaseWithTable(db, table, user string) error {
	if err := s.needPG(); err != nil {
		return err
	}
	s.pg.CreateDatabase(s.t, db)
	s.t.Cleanup(func() { s.pg.Exec(s.t, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)") })
	t := pgx.Identifier{table}.Sanitize()
	u := pgx.Identifier{user}.Sanitize()
	s.pg.ExecDB(s.t, db, "CREATE TABLE "+t+" (id bigserial PRIMARY KEY, client int, n int, note text)")
	s.pg.ExecDB(s.t, db, "GRANT ALL ON "+t+" TO "+u)
	s.pg.ExecDB(s.t, db, "GRANT ALL ON SEQUENCE "+pgx.Identifier{table + "_id_seq"}.Sanitize()+" TO "+u)
	return nil
}

func (s *scenario) tableHasRows(table, db string, want int) error {
	if err := s.needPG(); err != nil {
		return err
	}
	var n int
	if err := s.superQuery(db, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize(), nil, &n); err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("table %s of %s has %d rows, want %d", table, db, n, want)
	}
	return nil
}

// connectionsOf counts the client backends of user in pg_stat_activity.
func (s *scenario) connectionsOf(user string) (int, error) {
	var n int
	err := s.superQuery("postgres", `SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND usename = $1`, []any{user}, &n)
	return n, err
}

func (s *scenario) noConnectionsOf(user string) error {
	if err := s.needPG(); err != nil {
		return err
	}
	n, err := s.connectionsOf(user)
	if err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("PostgreSQL has %d connections of user %s, want none", n, user)
	}
	return nil
}
