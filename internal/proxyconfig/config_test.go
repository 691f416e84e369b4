package proxyconfig_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/doorman-go/doorman/internal/proxyconfig"
)

func TestSeedExample(t *testing.T) {
	t.Parallel()
	cfg, err := proxyconfig.Load("testdata/seed.good.yml")
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, cfg.ClusterUpdateInterval)
	require.Equal(t, "127.0.0.1:8009", cfg.ListenAddress)
	require.Equal(t, proxyconfig.DefaultConnectTimeout, cfg.ConnectTimeout)
	require.Equal(t, proxyconfig.DefaultPatroniTimeout, cfg.PatroniTimeout)
	require.Equal(t, proxyconfig.MinMaxTopologyAge, cfg.MaxTopologyAge)
	require.Equal(t, proxyconfig.DefaultShutdownTimeout, cfg.ShutdownTimeout)
	c := cfg.Clusters["my_cluster"]
	require.Len(t, c.Hosts, 3)
	require.Nil(t, c.TLS)
	require.Equal(t, proxyconfig.Port{Listen: "0.0.0.0:6432", Roles: []proxyconfig.Role{"leader"}, HostPort: 5432}, c.Ports["master"])
	require.Equal(t, proxyconfig.Port{
		Listen: "0.0.0.0:6433", Roles: []proxyconfig.Role{"sync", "async"},
		HostPort: 5432, MaxLagInBytes: 16 << 20,
	}, c.Ports["replicas"])
}

func TestFullExample(t *testing.T) {
	t.Parallel()
	cfg, err := proxyconfig.Load("testdata/full.good.yml")
	require.NoError(t, err)
	require.Equal(t, 500*time.Millisecond, cfg.ClusterUpdateInterval)
	require.Equal(t, 1500*time.Millisecond, cfg.ConnectTimeout)
	require.Equal(t, time.Second, cfg.PatroniTimeout)
	require.Equal(t, 45*time.Second, cfg.MaxTopologyAge)
	require.Equal(t, 2*time.Minute, cfg.ShutdownTimeout)
	c, ok := cfg.Clusters["Main"] // names keep their case
	require.True(t, ok)
	require.Equal(t, &proxyconfig.TLS{CACert: "/etc/patroni/ca.crt", ClientCert: "/etc/patroni/client.crt", ClientKey: "/etc/patroni/client.key"}, c.TLS)
	require.Contains(t, c.Ports, "RW")
	require.Contains(t, c.Ports, "anyRO")
	require.Zero(t, c.Ports["RW"].HostPort, "absent host_port means the member's own port")
	require.Equal(t, 3*time.Second, c.Ports["RW"].HoldTimeout)
	require.Zero(t, c.Ports["anyRO"].HoldTimeout, "absent hold_timeout refuses at once")
	require.True(t, c.Ports["anyRO"].HasRole(proxyconfig.RoleAny))
	require.False(t, c.Ports["anyRO"].HasRole(proxyconfig.RoleLeader))
}

func TestDefaultTopologyAgeFollowsInterval(t *testing.T) {
	t.Parallel()
	cfg, err := proxyconfig.Parse([]byte(`
cluster_update_interval: 20
clusters:
  c: {hosts: ["http://a:8008"], ports: {p: {listen: ":1", roles: [async]}}}
`))
	require.NoError(t, err)
	require.Equal(t, 60*time.Second, cfg.MaxTopologyAge)
}

// TestBadFiles checks every testdata/*.bad.yml: each "# want:" line must be
// a substring of the error.
func TestBadFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.bad.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			var wants []string
			for _, line := range strings.Split(string(b), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					wants = append(wants, w)
				}
			}
			require.NotEmpty(t, wants, "a bad file needs # want: lines")
			_, err = proxyconfig.Load(f)
			require.Error(t, err)
			for _, w := range wants {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string
	}{
		{"empty", "", "empty document"},
		{"two documents", "clusters: {}\n---\nclusters: {}\n", "more than one YAML document"},
		{"not a map", "- a\n", "cannot unmarshal"},
		{"roles not a list", "clusters: {c: {hosts: [\"http://a:1\"], ports: {p: {listen: \":1\", roles: leader}}}}", "cannot unmarshal"},
		{"duration map", "connect_timeout: {a: 1}\nclusters: {}", "want seconds or a duration"},
		{"huge seconds", "connect_timeout: 1e300\nclusters: {}", "bad number of seconds"},
		{"missing file", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.name == "missing file" {
				_, err := proxyconfig.Load(filepath.Join(t.TempDir(), "nope.yml"))
				require.ErrorIs(t, err, os.ErrNotExist)
				return
			}
			_, err := proxyconfig.Parse([]byte(tt.doc))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	t.Parallel()
	cfg, err := proxyconfig.Load("testdata/full.good.yml")
	require.NoError(t, err)
	cl := cfg.Clone()
	c := cl.Clusters["Main"]
	c.Hosts[0] = "changed"
	c.TLS.CACert = "changed"
	p := c.Ports["RW"]
	p.Roles[0] = "changed"
	c.Ports["new"] = proxyconfig.Port{}
	require.Equal(t, "https://10.0.0.1:8008/patroni", cfg.Clusters["Main"].Hosts[0])
	require.Equal(t, "/etc/patroni/ca.crt", cfg.Clusters["Main"].TLS.CACert)
	require.Equal(t, proxyconfig.RoleLeader, cfg.Clusters["Main"].Ports["RW"].Roles[0])
	require.NotContains(t, cfg.Clusters["Main"].Ports, "new")
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"seed.good.yml", "full.good.yml", "bad_values.bad.yml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := proxyconfig.Parse(b)
		if err == nil {
			require.NotNil(t, cfg)
			require.NotEmpty(t, cfg.Clusters)
		}
	})
}

func TestDeployExample(t *testing.T) {
	t.Parallel()
	cfg, err := proxyconfig.Load("../../deploy/patroni_proxy/patroni_proxy.yaml")
	require.NoError(t, err)
	require.Len(t, cfg.Clusters["my_cluster"].Ports, 2)
}
