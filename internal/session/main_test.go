package session_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/app/apptest"
	"github.com/doorman-go/doorman/internal/pgtest"
)

// One PostgreSQL for the package; each test starts its own pg_doorman.
var (
	pg        *pgtest.Cluster
	usersOnce sync.Once
	scramVer  string // verifier of user "app" (SCRAM)
	md5Ver    string // verifier of user "app_md5" (MD5)
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, pgtest.Options{MaxConnections: 300}, func(c *pgtest.Cluster) { pg = c }))
}

func setupUsers(t testing.TB) {
	usersOnce.Do(func() {
		scramVer = pg.CreateUser(t, "app", "app-secret", "scram-sha-256")
		md5Ver = pg.CreateUser(t, "app_md5", "md5-secret", "md5")
		pg.CreateUser(t, "plain", "plain-secret", "scram-sha-256")
		pg.CreateDatabase(t, "appdb")
		pg.ExecDB(t, "appdb", "GRANT ALL ON SCHEMA public TO PUBLIC")
		pg.ExecDB(t, "appdb", "CREATE TABLE items (id int primary key, note text)")
		pg.ExecDB(t, "appdb", "GRANT ALL ON items TO PUBLIC")
	})
}

// poolConfig is a pg_doorman config in front of the package's PostgreSQL
// over TCP, so that server authentication (passthrough) really happens.
func poolConfig(t testing.TB, extraGeneral, poolMode string, poolSize int) string {
	setupUsers(t)
	if !strings.Contains(extraGeneral, "query_wait_timeout") {
		extraGeneral += "\n  query_wait_timeout: 3s"
	}
	return fmt.Sprintf(`general:
  host: 127.0.0.1
  port: {{PORT}}
  unix_socket_dir: "{{DIR}}"
  admin_username: admin
  admin_password: admin-secret
%s
pools:
  appdb:
    server_host: 127.0.0.1
    server_port: %d
    pool_mode: %s
    users:
      - username: app
        password: '%s'
        pool_size: %d
      - username: app_md5
        password: '%s'
        pool_size: %d
      - username: plain
        password: '%s'
        server_username: plain
        server_password: plain-secret
        pool_size: %d
`, extraGeneral, pg.Port, poolMode, scramVer, poolSize, md5Ver, poolSize, scramVer, poolSize)
}

func start(t *testing.T, extraGeneral, mode string, size int) *apptest.Instance {
	t.Helper()
	return apptest.Start(t, poolConfig(t, extraGeneral, mode, size))
}

// counterValue sums the series of counter (or gauge) name in d's registry
// whose labels include the given name, value pairs (0 when there is none).
func counterValue(t *testing.T, d *apptest.Instance, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := d.Metrics.Registry().Gather()
	require.NoError(t, err)
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !found {
					continue series
				}
			}
			if m.GetCounter() != nil {
				n += m.GetCounter().GetValue()
			} else {
				n += m.GetGauge().GetValue()
			}
		}
	}
	return n
}
