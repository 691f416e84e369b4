package bdd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cucumber/godog"
)

// registerAdminSteps: the admin console, database pgdoorman (or pgbouncer).
func (s *scenario) registerAdminSteps(sc *godog.ScenarioContext) {
	sc.Step(`^the admin runs "([^"]*)" on the admin console$`, s.adminRuns)
	sc.Step(`^the result has a row where "([^"]*)" is "([^"]*)" and "([^"]*)" is "([^"]*)"$`, s.resultHasRow)
	sc.Step(`^the result has the columns "([^"]*)" in this order$`, s.resultHasColumns)
	sc.Step(`^the pool "([^"]*)" of user "([^"]*)" shows ([a-z0-9_]+) (=|>=) (\S+)$`, s.poolShows)
	sc.Step(`^the answer shows ([a-z0-9_]+) (=|>=) (\S+)$`, s.answerShows)
}

// adminRuns connects as the admin to database pgdoorman and runs one
// command with the simple query protocol, the only one the console speaks.
func (s *scenario) adminRuns(command string) error {
	if err := s.needDoorman(); err != nil {
		return err
	}
	conn, err := s.connectDSN(s.doorman.dsn(adminUser, adminPassword, "pgdoorman") + " default_query_exec_mode=simple_protocol")
	if err != nil {
		return fmt.Errorf("connect to the admin console: %w", err)
	}
	defer closeConn(conn)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	results, err := conn.PgConn().Exec(ctx, command).ReadAll()
	if err != nil {
		return fmt.Errorf("admin console: %s: %w", command, err)
	}
	if len(results) != 1 {
		return fmt.Errorf("admin console: %s returned %d results, want 1", command, len(results))
	}
	r := results[0]
	s.result = nil
	s.columns = s.columns[:0]
	for _, f := range r.FieldDescriptions {
		s.columns = append(s.columns, f.Name)
	}
	for _, row := range r.Rows {
		m := make(map[string]string, len(row))
		for i, v := range row {
			m[r.FieldDescriptions[i].Name] = string(v)
		}
		s.result = append(s.result, m)
	}
	s.t.Logf("%s: %v", command, s.result)
	return nil
}

func (s *scenario) resultHasRow(col1, val1, col2, val2 string) error {
	if s.result == nil {
		return errors.New("the admin ran no command in this scenario, or it returned no rows")
	}
	var seen []string
	for _, row := range s.result {
		v1, ok1 := row[col1]
		v2, ok2 := row[col2]
		if !ok1 || !ok2 {
			return fmt.Errorf("the result has no column %q or %q: %v", col1, col2, row)
		}
		if v1 == val1 && v2 == val2 {
			return nil
		}
		seen = append(seen, col1+"="+v1+" "+col2+"="+v2)
	}
	return fmt.Errorf("no row where %s is %q and %s is %q; rows: %s", col1, val1, col2, val2, strings.Join(seen, "; "))
}

// resultHasColumns checks that the space-separated names are columns of
// the last result, in this order (other columns may come between them).
func (s *scenario) resultHasColumns(names string) error {
	rest := s.columns
	for _, n := range strings.Fields(names) {
		i := slices.Index(rest, n)
		if i < 0 {
			return fmt.Errorf("no column %q (in this order) among %v", n, s.columns)
		}
		rest = rest[i+1:]
	}
	return nil
}

// poolShows checks one column of the row of a (database, user) pool.
func (s *scenario) poolShows(db, user, col, op, want string) error {
	for _, row := range s.result {
		if row["database"] == db && row["user"] == user {
			return compareCell(row, col, op, want)
		}
	}
	return fmt.Errorf("no row for database %q and user %q in %v", db, user, s.result)
}

// answerShows checks one column of a one-row result.
func (s *scenario) answerShows(col, op, want string) error {
	if len(s.result) != 1 {
		return fmt.Errorf("want one row, the result has %d: %v", len(s.result), s.result)
	}
	return compareCell(s.result[0], col, op, want)
}

// compareCell compares a cell with want: "=" as text, ">=" as numbers.
func compareCell(row map[string]string, col, op, want string) error {
	got, ok := row[col]
	if !ok {
		return fmt.Errorf("the result has no column %q: %v", col, row)
	}
	if op == "=" {
		if got != want {
			return fmt.Errorf("%s is %q, want %q", col, got, want)
		}
		return nil
	}
	g, err1 := strconv.ParseFloat(got, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s: compare %q >= %q: not numbers", col, got, want)
	}
	if g < w {
		return fmt.Errorf("%s is %s, want at least %s", col, got, want)
	}
	return nil
}
