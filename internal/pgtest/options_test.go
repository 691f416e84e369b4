package pgtest

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

func TestOptionsWithDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      Options
		want    Options
		wantErr string
	}{
		{
			name: "zero value",
			want: Options{MaxConnections: 200, PasswordEncryption: "scram-sha-256", HostAuthMethod: "scram-sha-256",
				ExtraConf: map[string]string{}},
		},
		{
			name: "md5 kept",
			in:   Options{MaxConnections: 7, PasswordEncryption: "md5", HostAuthMethod: "trust"},
			want: Options{MaxConnections: 7, PasswordEncryption: "md5", HostAuthMethod: "trust", ExtraConf: map[string]string{}},
		},
		{name: "bad encryption", in: Options{PasswordEncryption: "plain"}, wantErr: `password encryption "plain"`},
		{name: "negative connections", in: Options{MaxConnections: -1}, wantErr: "max connections -1"},
		{name: "port is ours", in: Options{ExtraConf: map[string]string{"port": "5432"}}, wantErr: `"port": owned by the harness`},
		{name: "socket is ours", in: Options{ExtraConf: map[string]string{"unix_socket_directories": "/x"}}, wantErr: "owned by the harness"},
		{name: "bad key", in: Options{ExtraConf: map[string]string{"a b": "1"}}, wantErr: "not a setting name"},
		{name: "hba newline", in: Options{ExtraHba: []string{"host all all\nlocal"}}, wantErr: "contains a newline"},
		{name: "method with space", in: Options{HostAuthMethod: "md5 x"}, wantErr: "must be one word"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.want.ExtraHba = []string{}
			if got.ExtraHba == nil {
				got.ExtraHba = []string{}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestConfValue(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"on", "on"},
		{"32MB", "32MB"},
		{"-1", "-1"},
		{"127.0.0.1", "'127.0.0.1'"},
		{"0.5", "0.5"},
		{"scram-sha-256", "'scram-sha-256'"},
		{"'quoted'", "'quoted'"},
		{"%m [%p] ", "'%m [%p] '"},
		{"it's", "'it''s'"},
		{"a,b", "'a,b'"},
		{"", "''"},
		{"/tmp/pgtest-1/sock", "'/tmp/pgtest-1/sock'"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, confValue(tt.in), "input %q", tt.in)
	}
}

func TestServerConfRenderLastWins(t *testing.T) {
	t.Parallel()
	opts, err := Options{ExtraConf: map[string]string{"log_connections": "off", "work_mem": "8MB"}}.withDefaults()
	require.NoError(t, err)
	conf := serverConf{port: 23456, socketDir: "/tmp/s", clusterName: "pgtest-c1", opts: opts}.render()
	require.Contains(t, conf, "port = 23456\n")
	require.Contains(t, conf, "unix_socket_directories = '/tmp/s'\n")
	require.Contains(t, conf, "log_line_prefix = '%m [%p] %q%u@%d '\n")
	require.Contains(t, conf, "fsync = off\n")
	// An extra setting comes after the harness's own, so it wins.
	require.Greater(t, strings.LastIndex(conf, "log_connections = off"), strings.Index(conf, "log_connections = on"))
	require.Contains(t, conf, "work_mem = 8MB\n")
}

func TestRenderHbaOrder(t *testing.T) {
	t.Parallel()
	opts, err := Options{HostAuthMethod: "md5", ExtraHba: []string{"host all bob 127.0.0.1/32 reject"}}.withDefaults()
	require.NoError(t, err)
	got := renderHba(opts, []string{`host all "alice" 127.0.0.1/32 scram-sha-256`})
	want := []string{
		"# written by pgtest; first match wins",
		"local all postgres trust",
		"host all bob 127.0.0.1/32 reject",
		"local all all trust",
		"host all postgres 127.0.0.1/32 trust",
		"host replication all 127.0.0.1/32 trust",
		`host all "alice" 127.0.0.1/32 scram-sha-256`,
		"host all all 127.0.0.1/32 md5",
	}
	require.Equal(t, want, strings.Split(strings.TrimSpace(got), "\n"))
}

func TestUserHbaLine(t *testing.T) {
	t.Parallel()
	require.Equal(t, `host all "Bob" 127.0.0.1/32 md5`, userHbaLine("scram-sha-256", "Bob", "md5"))
	require.Equal(t, `host all "a" 127.0.0.1/32 scram-sha-256`, userHbaLine("md5", "a", "scram-sha-256"))
	require.Empty(t, userHbaLine("trust", "a", "md5"))
	require.Empty(t, userHbaLine("reject", "a", "md5"))
}

// TestDSNQuoting uses pgconn's parser as the oracle for the quoting.
func TestDSNQuoting(t *testing.T) {
	t.Parallel()
	c := &Cluster{Host: "127.0.0.1", Port: 25432, SocketDir: "/tmp/dir with space"}
	for _, pw := range []string{"simple", "with space", `it's`, `back\slash`, "a=b", "ünïcode"} {
		cfg, err := pgconn.ParseConfig(c.DSN("us er", pw, "d'b"))
		require.NoError(t, err, pw)
		require.Equal(t, pw, cfg.Password)
		require.Equal(t, "us er", cfg.User)
		require.Equal(t, "d'b", cfg.Database)
		require.Equal(t, "127.0.0.1", cfg.Host)
		require.Equal(t, uint16(25432), cfg.Port)
		require.Nil(t, cfg.TLSConfig)
	}
	cfg, err := pgconn.ParseConfig(c.SuperDSN("postgres"))
	require.NoError(t, err)
	require.Equal(t, "/tmp/dir with space", cfg.Host)
	require.Equal(t, "postgres", cfg.User)
}

func TestFindBinDirMissing(t *testing.T) {
	t.Setenv("PGTEST_BINDIR", t.TempDir())
	_, err := FindBinDir()
	require.ErrorIs(t, err, ErrNoBinaries)
	require.ErrorContains(t, err, "apt-get install postgresql-15")
	_, err = FindBinary("surely-not-a-postgres-program")
	require.ErrorContains(t, err, "apt-get install postgresql-15")
}
