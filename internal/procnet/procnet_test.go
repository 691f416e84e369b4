package procnet

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTCP(t *testing.T) {
	t.Parallel()
	const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	row := func(st string, inode int) string {
		return fmt.Sprintf("   0: 0100007F:1920 00000000:0000 %s 00000000:00000000 00:00000000 00000000     0        0 %d 1 0 100 0 0 10 0\n", st, inode)
	}
	tests := []struct {
		name  string
		in    string
		owned Owned
		want  map[int]int
	}{
		{"empty", "", nil, nil},
		{"header only", header, nil, nil},
		{"every row without a filter", header + row("0A", 1) + row("01", 2) + row("01", 3), nil,
			map[int]int{TCPListen: 1, TCPEstablished: 2}},
		{"filtered by inode", header + row("0A", 1) + row("01", 2), func(i uint64) bool { return i == 2 },
			map[int]int{TCPEstablished: 1}},
		{"every known state", header + row("01", 1) + row("02", 1) + row("03", 1) + row("04", 1) + row("05", 1) +
			row("06", 1) + row("07", 1) + row("08", 1) + row("09", 1) + row("0A", 1) + row("0B", 1) + row("0C", 1) + row("0D", 1), nil,
			map[int]int{1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 10: 1, 11: 1, 12: 1, 13: 1}},
		{"a state from a newer kernel", header + row("0E", 1), nil, map[int]int{0: 1}},
		{"malformed rows are skipped", header + "   0: short\n" + row("ZZ", 1) +
			"   1: 0100007F:1920 00000000:0000 0A 0:0 00:0 0 0 0 notanumber 1\n" + row("0A", 2), nil,
			map[int]int{TCPListen: 1}},
		{"tabs and no trailing newline", header + "0:\t0100007F:1920\t0:0\t06\t0:0\t0:0\t0\t0\t0\t7", nil,
			map[int]int{TCPTimeWait: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var seen []uint64
			got, err := ParseTCP(strings.NewReader(tt.in), tt.owned, func(i uint64) { seen = append(seen, i) })
			require.NoError(t, err)
			var want TCPCounts
			for st, n := range tt.want {
				want[st] = n
			}
			require.Equal(t, want, got)
			require.Len(t, seen, got.Total())
		})
	}
}

func TestParseUnix(t *testing.T) {
	t.Parallel()
	const header = "Num       RefCount Protocol Flags    Type St Inode Path\n"
	row := func(typ, st string, inode int) string {
		return fmt.Sprintf("0000000000000000: 00000002 00000000 00010000 %s %s %d /tmp/x\n", typ, st, inode)
	}
	tests := []struct {
		name string
		in   string
		want UnixCounts
	}{
		{"header only", header, UnixCounts{}},
		{"stream states", header + row("0001", "00", 1) + row("0001", "01", 2) + row("0001", "02", 3) +
			row("0001", "03", 4) + row("0001", "04", 5) + row("0001", "07", 6),
			UnixCounts{Free: 1, Unconnected: 1, Connecting: 1, Connected: 1, Disconnecting: 1, Other: 1}},
		{"by type", header + row("0002", "01", 1) + row("0005", "03", 2) + row("0003", "01", 3),
			UnixCounts{Dgram: 1, SeqPacket: 1, Other: 1}},
		{"no path", header + "0000000000000000: 00000003 00000000 00000000 0001 03 1664\n", UnixCounts{Connected: 1}},
		{"malformed", header + "x: 1 2 3\n" + row("zz", "01", 1) + "0: 1 0 0 0001 03 -5\n", UnixCounts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseUnix(strings.NewReader(tt.in), nil, nil)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	long := "header\n" + strings.Repeat("x", MaxLine+1) + "\n"
	_, err := ParseTCP(strings.NewReader(long), nil, nil)
	require.ErrorIs(t, err, ErrLineTooLong)
	_, err = ParseUnix(strings.NewReader(long), nil, nil)
	require.ErrorIs(t, err, ErrLineTooLong)

	var many bytes.Buffer
	many.WriteString("header\n")
	for i := 0; i <= MaxLines; i++ {
		many.WriteString("x\n")
	}
	_, err = ParseTCP(&many, nil, nil)
	require.ErrorIs(t, err, ErrTooManyLines)
}

// fixtureRoot builds a /proc look-alike: testdata/net and a self/fd
// directory whose links name sockets 1001 to 1012 (1012 is in no table:
// Unknown) and one file.
func fixtureRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	fd := filepath.Join(root, "self", "fd")
	require.NoError(t, os.MkdirAll(fd, 0o755))
	for i := 1001; i <= 1012; i++ {
		require.NoError(t, os.Symlink(fmt.Sprintf("socket:[%d]", i), filepath.Join(fd, fmt.Sprint(i-1000+2))))
	}
	require.NoError(t, os.Symlink("/dev/null", filepath.Join(fd, "0")))
	require.NoError(t, os.Symlink("anon_inode:[eventpoll]", filepath.Join(fd, "1")))
	net := filepath.Join(root, "net")
	require.NoError(t, os.MkdirAll(net, 0o755))
	for _, name := range []string{"tcp", "tcp6", "unix"} {
		b, err := os.ReadFile(filepath.Join("testdata", "net", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(net, name), b, 0o644))
	}
	return root
}

func TestReadFixture(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		_, err := Read(t.TempDir())
		require.ErrorIs(t, err, ErrUnsupported)
		return
	}
	got, err := Read(fixtureRoot(t))
	require.NoError(t, err)
	var tcp, tcp6 TCPCounts
	tcp[TCPListen], tcp[TCPEstablished], tcp[TCPCloseWait] = 1, 2, 1
	tcp6[TCPListen], tcp6[TCPSynSent] = 1, 1
	require.Equal(t, Counts{
		TCP: tcp, TCP6: tcp6,
		Unix:    UnixCounts{Unconnected: 1, Connected: 2, Dgram: 1, SeqPacket: 1},
		Unknown: 1,
	}, got)
}

func TestReadMissingTable(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Read is Linux only")
	}
	root := fixtureRoot(t)
	require.NoError(t, os.Remove(filepath.Join(root, "net", "tcp6")))
	got, err := Read(root)
	require.NoError(t, err)
	require.Zero(t, got.TCP6.Total())
	require.Equal(t, 3, got.Unknown, "the two tcp6 sockets are now unknown")
}

func TestReadLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Read is Linux only")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s, err := ln.Accept()
	require.NoError(t, err)
	defer s.Close()

	got, err := Read("/proc")
	require.NoError(t, err)
	require.GreaterOrEqual(t, got.TCP[TCPListen], 1)
	require.GreaterOrEqual(t, got.TCP[TCPEstablished], 2, "both ends of the connection are ours")

	// Sockets of other processes are not counted: a listener of ours
	// closed is gone from the count.
	require.NoError(t, ln.Close())
	after, err := Read("/proc")
	require.NoError(t, err)
	require.Equal(t, got.TCP[TCPListen]-1, after.TCP[TCPListen])
}

func TestSocketInode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		link string
		want uint64
		ok   bool
	}{
		{"socket:[12345]", 12345, true},
		{"socket:[]", 0, false},
		{"socket:[12", 0, false},
		{"pipe:[5]", 0, false},
		{"/dev/null", 0, false},
	}
	for _, tt := range tests {
		got, ok := socketInode(tt.link)
		require.Equal(t, tt.ok, ok, tt.link)
		require.Equal(t, tt.want, got, tt.link)
	}
}

// BenchmarkRead reads the counts with 1,000 TCP sockets open (500
// loopback connections, both ends), what one SHOW SOCKETS or scrape costs.
func BenchmarkRead(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("Read is Linux only")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(b, err)
	defer ln.Close()
	for i := 0; i < 500; i++ {
		c, err := net.Dial("tcp4", ln.Addr().String())
		require.NoError(b, err)
		defer c.Close()
		s, err := ln.Accept()
		require.NoError(b, err)
		defer s.Close()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Read("/proc"); err != nil {
			b.Fatal(err)
		}
	}
}
