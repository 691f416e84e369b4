// Package deploytest tests the monitoring files in deploy/ against the real
// thing: deploy/prometheus/pg_doorman_alerts.yml with promtool (check rules
// and its unit tests), and every PromQL expression of the alert rules and of
// deploy/grafana/pg_doorman.json against a real Prometheus that scrapes an
// in-process pg_doorman while pgbench runs through it.
//
// The integration test starts PostgreSQL (internal/pgtest), pg_doorman
// (internal/app/apptest) with three pools that light up every metric
// family: one with max_db_connections for pgbench, one with auth_query and
// one with patroni_api_urls whose local server is down so that it serves
// from the member a fake Patroni REST API names. A dashboard expression
// must return data, unless it is in the commented allowlist of series that
// a healthy run legitimately lacks; then it must at least be valid. Every
// metric selector of an alert rule must select series (the rule watches
// something that exists), and an alert expression must be empty (silent)
// in this healthy run unless the run provokes it on purpose.
//
// prometheus, promtool and pgbench must be installed (Debian: apt-get
// install prometheus postgresql-client-15, or scripts/deps.sh test); the
// tests fail, not skip, without them. The package has no non-test code.
package deploytest
