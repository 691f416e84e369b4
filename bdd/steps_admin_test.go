package bdd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cucumber/godog"
)

// registerAdminSteps: the admin console, database pgdoorman (or pgbouncer).
func (s *scenario) registerAdminSteps(sc *godog.ScenarioContext) {
	sc.Step(`^the admin runs "([^"]*)" on the admin console$`, s.adminRuns)
	sc.Step(`^the result has a row where "([^"]*)" is "([^"]*)" and "([^"]*)" is "([^"]*)"$`, s.resultHasRow)
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
